package controllers

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/gate/contract"
)

// agentConditions are the pod conditions the node agent owns, as the
// kubelet owns them (PodScheduled, which it carries over, included).
// Others write other conditions on the same pod through pods/status: the
// gate its contract.ContainersReadyCondition, a controller the condition of a
// readiness gate of its own.
var agentConditions = []corev1.PodConditionType{
	corev1.PodScheduled,
	corev1.PodReady,
	corev1.PodInitialized,
	corev1.ContainersReady,
	corev1.PodReadyToStartContainers,
	corev1.PodResizeInProgress,
	corev1.PodResizePending,
}

// mergeAgentConditions is the conditions a status write of the node agent
// leaves on the pod: the stored conditions it does not own, as stored,
// then its own, as written. The kubelet merges its status with the API's
// pod the same way, so a condition written by someone else is never lost
// to its writes, nor overwritten with an older value it had seen.
func mergeAgentConditions(stored, written []corev1.PodCondition) []corev1.PodCondition {
	owned := func(c corev1.PodCondition) bool { return slices.Contains(agentConditions, c.Type) }
	var out []corev1.PodCondition
	for _, c := range stored {
		if !owned(c) {
			out = append(out, *c.DeepCopy())
		}
	}
	for _, c := range written {
		if owned(c) {
			out = append(out, *c.DeepCopy())
		}
	}
	return out
}

// gateConditionMessage is the message of the gate's condition on the pod
// (contract.ContainersReadyCondition) while it is not True: the containers
// that are not ready, each with its probe's message. "" when the pod has
// no such condition or it is True.
func gateConditionMessage(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == contract.ContainersReadyCondition && c.Status != corev1.ConditionTrue {
			return c.Message
		}
	}
	return ""
}

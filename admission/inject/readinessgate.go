package inject

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/gate/contract"
)

// addReadinessGate makes the pod Ready only once the gate says every
// container is: the gate writes the condition contract.ContainersReadyCondition
// on its own pod, and the kubelet (or node agent) keeps Ready False, with
// reason ReadinessGatesNotReady, until it is True. The condition's message
// names the container that is not ready, which the pod's own conditions
// otherwise cannot: the gate runs the readiness probes, so to the kubelet
// only the gate looks unready. Readiness gates the user wrote stay, and
// the gate is added once.
func addReadinessGate(spec *corev1.PodSpec) {
	for _, g := range spec.ReadinessGates {
		if g.ConditionType == contract.ContainersReadyCondition {
			return
		}
	}
	spec.ReadinessGates = append(spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: contract.ContainersReadyCondition})
}

package podstatus

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pod condition reasons, as the kubelet writes them.
const (
	ReasonContainersNotReady       = "ContainersNotReady"
	ReasonContainersNotInitialized = "ContainersNotInitialized"
	ReasonPodCompleted             = "PodCompleted"
	ReasonReadinessGatesNotReady   = "ReadinessGatesNotReady"
)

// Conditions are the pod's conditions in the kubelet's order, for a pod
// in phase. prev holds the conditions last reported (by type): a
// condition whose status did not change keeps its lastTransitionTime,
// and PodScheduled is prev's when there (the scheduler's); else a changed
// or new condition's time is now. The caller keeps the result as the
// next prev.
func Conditions(p *Pod, phase corev1.PodPhase, prev map[corev1.PodConditionType]corev1.PodCondition, now metav1.Time) []corev1.PodCondition {
	var notInit []string
	for _, c := range p.Inits {
		switch {
		case c.Sidecar && c.Running && c.Started:
		case c.Succeeded:
		case p.Initialized && c.Sidecar:
		default:
			notInit = append(notInit, c.Name)
		}
	}
	initialized := cond(corev1.PodInitialized, p.Initialized || len(p.Inits) == 0, "", "")
	if !initialized.isTrue() {
		initialized.reason = ReasonContainersNotInitialized
		initialized.message = fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(notInit, " "))
	}

	// ContainersReady: every sidecar and every main container is Ready.
	var unready []string
	for _, c := range p.Inits {
		if c.Sidecar && !(c.Running && c.Ready && c.Started) {
			unready = append(unready, c.Name)
		}
	}
	for _, c := range p.Mains {
		if !(c.Running && c.Ready && c.Started) {
			unready = append(unready, c.Name)
		}
	}
	containersReady := cond(corev1.ContainersReady, len(unready) == 0, "", "")
	if !containersReady.isTrue() {
		containersReady.reason = ReasonContainersNotReady
		containersReady.message = fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	}
	if phase == corev1.PodSucceeded {
		containersReady = cond(corev1.ContainersReady, false, ReasonPodCompleted, "")
	}

	ready := readyCondition(containersReady, p.ReadinessGates, p.GateConditions)

	toStart := cond(corev1.PodReadyToStartContainers, true, "", "")
	if p.Terminating && !p.anyRunning() {
		// The sandbox is gone once everything stopped.
		toStart = cond(corev1.PodReadyToStartContainers, false, "", "")
	}
	var out []corev1.PodCondition
	for _, c := range []podCond{toStart, initialized, ready, containersReady} {
		out = append(out, c.since(prev, now))
	}
	sched, ok := prev[corev1.PodScheduled]
	if !ok {
		// Bound at creation (spec.nodeName set, no scheduler involved):
		// the kubelet reports PodScheduled True all the same, from when
		// it first saw the pod.
		sched = corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now}
	}
	return append(out, sched)
}

// podCond is a condition before its transition time is known.
type podCond struct {
	typ             corev1.PodConditionType
	status          corev1.ConditionStatus
	reason, message string
}

func cond(t corev1.PodConditionType, ok bool, reason, message string) podCond {
	s := corev1.ConditionFalse
	if ok {
		s = corev1.ConditionTrue
	}
	return podCond{typ: t, status: s, reason: reason, message: message}
}

func (c podCond) isTrue() bool { return c.status == corev1.ConditionTrue }

// since is c with its lastTransitionTime: prev's while the status is the
// same, else now.
func (c podCond) since(prev map[corev1.PodConditionType]corev1.PodCondition, now metav1.Time) corev1.PodCondition {
	at := now
	if p, ok := prev[c.typ]; ok && p.Status == c.status {
		at = p.LastTransitionTime
	}
	return corev1.PodCondition{Type: c.typ, Status: c.status, Reason: c.reason, Message: c.message, LastTransitionTime: at}
}

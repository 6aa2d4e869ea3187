package podstatus

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Readiness gates: a pod whose spec.readinessGates name conditions that
// others write on it (the gate's contract.ContainersReadyCondition, a load
// balancer controller's) is Ready only once every one of them is True, as
// the kubelet decides.

// GateConditions picks, from the pod as the API has it, the conditions
// its readiness gates name.
func GateConditions(obj *corev1.Pod) []corev1.PodCondition {
	var out []corev1.PodCondition
	for _, g := range obj.Spec.ReadinessGates {
		if c := findCondition(obj.Status.Conditions, g.ConditionType); c != nil {
			out = append(out, *c)
		}
	}
	return out
}

func findCondition(conds []corev1.PodCondition, t corev1.PodConditionType) *corev1.PodCondition {
	i := slices.IndexFunc(conds, func(c corev1.PodCondition) bool { return c.Type == t })
	if i < 0 {
		return nil
	}
	return &conds[i]
}

// GatesKey is what Ready depends on of those conditions: each gate's
// status, or that it has none. Messages may change without changing it.
func GatesKey(obj *corev1.Pod) string {
	var b strings.Builder
	for _, g := range obj.Spec.ReadinessGates {
		status := "absent"
		if c := findCondition(obj.Status.Conditions, g.ConditionType); c != nil {
			status = string(c.Status)
		}
		fmt.Fprintf(&b, "%s=%s;", g.ConditionType, status)
	}
	return b.String()
}

// readyCondition is the kubelet's Ready condition: ContainersReady's status,
// reason and message while that is not True; then False with reason
// ReadinessGatesNotReady while any readiness gate's condition is missing
// or not True, one message per such gate in the kubelet's words, joined
// by ", "; else True.
func readyCondition(containersReady podCond, gates []corev1.PodReadinessGate, conds []corev1.PodCondition) podCond {
	ready := containersReady
	ready.typ = corev1.PodReady
	if !ready.isTrue() {
		return ready
	}
	var unready []string
	for _, g := range gates {
		switch c := findCondition(conds, g.ConditionType); {
		case c == nil:
			unready = append(unready, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType))
		case c.Status != corev1.ConditionTrue:
			unready = append(unready, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", g.ConditionType, c.Status))
		}
	}
	if len(unready) > 0 {
		return cond(corev1.PodReady, false, ReasonReadinessGatesNotReady, strings.Join(unready, ", "))
	}
	return ready
}

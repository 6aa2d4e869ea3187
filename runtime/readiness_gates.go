package runtime

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Readiness gates: a pod whose spec.readinessGates name conditions that
// others write on it (the gate's wire.ContainersReadyCondition, a load
// balancer controller's) is Ready only once every one of them is True, as
// the kubelet decides. The agent learns of those conditions through its
// PodSource, as the kubelet learns of them through its pod watch, and
// publishes Ready again as soon as one changes, without waiting for a
// probe.

// evConditions: the conditions the pod's readiness gates name changed on
// the API's pod (their values now; a gate without one is absent).
type evConditions struct{ conds []corev1.PodCondition }

// gateConditions picks, from the pod as the API has it, the conditions
// its readiness gates name.
func gateConditions(obj *corev1.Pod) []corev1.PodCondition {
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

// gatesKey is what Ready depends on of those conditions: each gate's
// status, or that it has none. Messages may change without changing it.
func gatesKey(obj *corev1.Pod) string {
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

// noteGateConditions tells the pod worker when what its readiness gates
// depend on changed on the API's pod. It runs on the PodSource's
// goroutine, which owns a.gatesSeen; every status write of the agent
// comes back through it, and only a real change is news.
func (a *Agent) noteGateConditions(p *pod, obj *corev1.Pod) {
	if len(obj.Spec.ReadinessGates) == 0 {
		return
	}
	key := gatesKey(obj)
	if prev, ok := a.gatesSeen[obj.UID]; ok && prev == key {
		return
	}
	a.gatesSeen[obj.UID] = key
	p.post(evConditions{conds: gateConditions(obj)})
}

// forgetGates drops what noteGateConditions kept of a removed pod.
func (a *Agent) forgetGates(uid types.UID) { delete(a.gatesSeen, uid) }

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
		return cond(corev1.PodReady, false, reasonReadinessGatesNotReady, strings.Join(unready, ", "))
	}
	return ready
}

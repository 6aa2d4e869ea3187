package runtime

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podgate/podgate/runtime/podstatus"
)

// Readiness gates: a pod whose spec.readinessGates name conditions that
// others write on it (the gate's wire.ContainersReadyCondition, a load
// balancer controller's) is Ready only once every one of them is True, as
// the kubelet decides. The agent learns of those conditions through its
// PodSource, as the kubelet learns of them through its pod watch, and
// publishes Ready again as soon as one changes, without waiting for a
// probe (package podstatus computes Ready).

// evConditions: the conditions the pod's readiness gates name changed on
// the API's pod (their values now; a gate without one is absent).
type evConditions struct{ conds []corev1.PodCondition }

// noteGateConditions tells the pod worker when what its readiness gates
// depend on changed on the API's pod. It runs on the PodSource's
// goroutine, which owns a.gatesSeen; every status write of the agent
// comes back through it, and only a real change is news.
func (a *Agent) noteGateConditions(p *pod, obj *corev1.Pod) {
	if len(obj.Spec.ReadinessGates) == 0 {
		return
	}
	key := podstatus.GatesKey(obj)
	if prev, ok := a.gatesSeen[obj.UID]; ok && prev == key {
		return
	}
	a.gatesSeen[obj.UID] = key
	p.post(evConditions{conds: podstatus.GateConditions(obj)})
}

// forgetGates drops what noteGateConditions kept of a removed pod.
func (a *Agent) forgetGates(uid types.UID) { delete(a.gatesSeen, uid) }

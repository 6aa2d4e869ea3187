// Package podwatch is what the node agent makes of its pod watch, as the
// kubelet does of its own: which changes of a pod bound to the node are
// news to the pod's worker. Every status write of the agent comes back
// through the watch, so only a new (or a shorter) deletion and a real
// change of the conditions the pod's readiness gates name (written by
// others: the gate, a load balancer controller) are passed on. A pod the
// agent does not run yet gets a worker, unless it finished or was deleted
// before it ran here.
package podwatch

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podgate/podgate/node/podstatus"
)

// DefaultGraceSeconds is the grace period of a deletion that names none.
const DefaultGraceSeconds = 30

// Admission is what becomes of a pod the agent does not run.
type Admission int

const (
	// Run: a new pod; its worker starts.
	Run Admission = iota
	// Remove: deleted before it ever ran here, or finished and deleted:
	// nothing to stop, the object is removed (the kubelet's final
	// delete).
	Remove
	// Leave: finished (Succeeded or Failed) and not deleted: it only
	// waits to be removed once deleted.
	Leave
)

// Admit is what becomes of obj, a pod of this node the agent does not run.
func Admit(obj *corev1.Pod) Admission {
	deleted := obj.DeletionTimestamp != nil
	switch obj.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		if deleted {
			return Remove
		}
		return Leave
	}
	if deleted {
		return Remove
	}
	return Run
}

// Seen is what the watch has passed on of each pod, by UID. The zero
// value is not usable; use New. Only the watch's goroutine uses it.
type Seen struct {
	deletions map[types.UID]int64  // the grace periods passed on
	gates     map[types.UID]string // podstatus.GatesKey of what was passed on
}

// New returns a Seen that has passed nothing on.
func New() *Seen {
	return &Seen{deletions: map[types.UID]int64{}, gates: map[types.UID]string{}}
}

// Admitted records a pod whose worker starts from obj as it is now: its
// readiness gates' conditions are the worker's already.
func (s *Seen) Admitted(obj *corev1.Pod) {
	s.gates[obj.UID] = podstatus.GatesKey(obj)
}

// Gone forgets a pod that was removed.
func (s *Seen) Gone(uid types.UID) {
	delete(s.deletions, uid)
	delete(s.gates, uid)
}

// Deletion reports obj's deletion grace period in seconds (its
// deletionGracePeriodSeconds, default 30) when it is news: obj is marked
// for deletion and nothing was passed on yet, or only a longer grace
// period.
func (s *Seen) Deletion(obj *corev1.Pod) (grace int64, news bool) {
	if obj.DeletionTimestamp == nil {
		return 0, false
	}
	grace = DefaultGraceSeconds
	if g := obj.DeletionGracePeriodSeconds; g != nil {
		grace = *g
	}
	if prev, ok := s.deletions[obj.UID]; ok && prev <= grace {
		return 0, false
	}
	s.deletions[obj.UID] = grace
	return grace, true
}

// GateConditions reports the conditions obj's readiness gates name (a
// gate without one is absent) when any of them changed since they were
// last passed on; a pod without readiness gates has no such news.
func (s *Seen) GateConditions(obj *corev1.Pod) ([]corev1.PodCondition, bool) {
	if len(obj.Spec.ReadinessGates) == 0 {
		return nil, false
	}
	key := podstatus.GatesKey(obj)
	if prev, ok := s.gates[obj.UID]; ok && prev == key {
		return nil, false
	}
	s.gates[obj.UID] = key
	return podstatus.GateConditions(obj), true
}

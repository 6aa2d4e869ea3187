package node

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podgate/podgate/node/podwatch"
)

// PodSource is how the agent learns what the API did to the pods bound to
// it (spec.nodeName == Options.NodeName): a deletion marked with
// metadata.deletionTimestamp and deletionGracePeriodSeconds, or the
// object removed at once (a forced delete). The agent never takes such an
// order any other way, as the kubelet only watches the API server.
type PodSource interface {
	// WatchPods calls onChange from one goroutine, in order, with each
	// pod of nodeName as it is now (gone: it was removed) until ctx ends.
	WatchPods(ctx context.Context, nodeName string, onChange func(pod *corev1.Pod, gone bool)) error
}

// PodWriter is where the agent writes what it observed of its pods.
type PodWriter interface {
	// UpdatePodStatus writes pod.Status (the pods/status subresource: the
	// stored metadata and spec stay). Deletion marks on pod are the
	// agent's own (it terminates its pods when it shuts down) and are
	// kept only where the API has none.
	UpdatePodStatus(pod *corev1.Pod) error
	// RemovePod removes the pod once every container stopped: the
	// kubelet's final delete, preconditioned on uid.
	RemovePod(namespace, name string, uid types.UID) error
}

// EventWriter is where the agent's events go: the events API.
type EventWriter interface {
	// CreateEvent stores ev; an AlreadyExists error when its name is
	// taken.
	CreateEvent(ev *corev1.Event) error
	// UpdateEvent changes a stored event (a repeat bumps its count); a
	// NotFound error when it is gone.
	UpdateEvent(namespace, name string, change func(*corev1.Event)) error
	// DeleteEvent removes an event (the oldest, past the limit).
	DeleteEvent(namespace, name string) error
}

// observe turns what the API did to a pod into the pod worker's events
// (package podwatch: only news is passed on). It runs on the PodSource's
// goroutine only, which owns a.seen.
func (a *Agent) observe(obj *corev1.Pod, gone bool) {
	if gone {
		a.seen.Gone(obj.UID)
	}
	p := a.pod(obj.Namespace, obj.Name)
	if p == nil && !gone {
		a.admit(obj)
		return
	}
	if p == nil || p.uid != obj.UID {
		return
	}
	if gone {
		// Removed before it stopped (grace period 0): kill what runs.
		p.post(evForce{})
		return
	}
	if conds, ok := a.seen.GateConditions(obj); ok {
		p.post(evConditions{conds: conds})
	}
	if grace, ok := a.seen.Deletion(obj); ok {
		p.post(evDelete{grace: &grace})
	}
}

// admit starts the worker of a pod the agent does not run, or removes
// one that has nothing to stop (podwatch.Admit).
func (a *Agent) admit(obj *corev1.Pod) {
	switch podwatch.Admit(obj) {
	case podwatch.Leave:
		return
	case podwatch.Remove:
		if err := a.opts.Pods.RemovePod(obj.Namespace, obj.Name, obj.UID); err != nil && !apierrors.IsNotFound(err) {
			a.log.Warn("remove pod", "pod", obj.Namespace+"/"+obj.Name, "err", err)
		}
		return
	}
	p, err := newPod(a, obj)
	if err != nil {
		a.log.Error("admit pod", "pod", obj.Namespace+"/"+obj.Name, "err", err)
		return
	}
	a.seen.Admitted(obj)
	if !a.workers.Add(p.key(), p) {
		p.mgr.Stop() // shutting down
		p.closeNet()
		return
	}
	p.startPrepare()
	go p.run()
	p.post(evSync{})
}

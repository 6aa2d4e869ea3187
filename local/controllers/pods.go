package controllers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podgate/podgate/local/objstore"
)

// Pods is the embedded API server's side of the pods for `podgate run`:
// what the node agent reads and writes (the kubelet's pod watch,
// pods/status, the final delete) and what a DELETE of the control API
// does (mark the pod for deletion, as the API server does). On Kubernetes
// the kube-apiserver plays this part.
type Pods struct {
	store *objstore.Store
	log   *slog.Logger
	// written is told of every pod this writes, before the write
	// returns (SetWritten).
	written atomic.Pointer[func(*corev1.Pod)]
}

// SetWritten has f told of every pod UpdatePodStatus and DeletePod write,
// before they return. The EndpointSlice controller takes it, so that a
// pod's endpoint has turned not ready before the node agent acts on the
// status it wrote (records Killing, sends SIGTERM): traffic leaves first,
// which a watch alone, always a little behind, cannot promise.
func (s *Pods) SetWritten(f func(*corev1.Pod)) { s.written.Store(&f) }

func (s *Pods) tell(p *corev1.Pod) {
	if f := s.written.Load(); f != nil && p != nil {
		(*f)(p)
	}
}

// NewPods serves the pods of store (whose clock stamps deletionTimestamp);
// log reports a watch that had to start over (nil discards).
func NewPods(store *objstore.Store, log *slog.Logger) *Pods {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Pods{store: store, log: log}
}

// UpdatePodStatus writes pod.Status as the pods/status subresource does:
// the stored metadata and spec stay, so a deletion the API marked
// meanwhile is never undone. The deletion marks the agent sets itself
// (it terminates its pods when it shuts down) are taken when the API has
// none. Conditions the agent does not own (the gate's, under a readiness
// gate) stay as stored, under the same lock as the write
// (mergeAgentConditions).
func (s *Pods) UpdatePodStatus(pod *corev1.Pod) error {
	stored, err := s.store.Pods.Modify(pod.Namespace, pod.Name, func(cur *corev1.Pod) error {
		if cur.UID != pod.UID {
			return apierrors.NewConflict(s.store.Pods.GroupResource(), pod.Name,
				fmt.Errorf("pod %s/%s was replaced (uid %s, status for %s)", pod.Namespace, pod.Name, cur.UID, pod.UID))
		}
		conds := mergeAgentConditions(cur.Status.Conditions, pod.Status.Conditions)
		cur.Status = *pod.Status.DeepCopy()
		cur.Status.Conditions = conds
		if cur.DeletionTimestamp == nil && pod.DeletionTimestamp != nil {
			cur.DeletionTimestamp = pod.DeletionTimestamp.DeepCopy()
			cur.DeletionGracePeriodSeconds = pod.DeletionGracePeriodSeconds
		}
		return nil
	})
	if err == nil {
		s.tell(stored)
	}
	return err
}

// RemovePod removes the pod for good once it stopped: the kubelet's
// delete with grace period 0, preconditioned on the UID so that a pod of
// the same name made since is left alone.
func (s *Pods) RemovePod(namespace, name string, uid types.UID) error {
	cur, err := s.store.Pods.Get(namespace, name)
	if err != nil {
		return err
	}
	if cur.UID != uid {
		return nil
	}
	_, err = s.store.Pods.Delete(namespace, name)
	return err
}

// DeletePod implements the control API's DELETE of a pod as the API
// server does (objstore.Store.DeletePod: deletionTimestamp and
// deletionGracePeriodSeconds on a running pod, which the node agent sees,
// terminates and removes; grace period 0 removes it at once and the agent
// kills what still runs), and tells the EndpointSlice controller of a
// marked pod before it returns, so the endpoint is terminating by the time
// the DELETE is answered.
func (s *Pods) DeletePod(_ context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	pod, gone, err := s.store.DeletePod(namespace, name, opts)
	if err == nil && !gone {
		s.tell(pod)
	}
	return err
}

// WatchPods calls onChange with every pod bound to nodeName as it is now,
// and with gone set once one was removed, until ctx ends. The pods there
// are now are reported before it returns, on the caller's goroutine; the
// changes after, on one goroutine of its own, in the store's order. When
// the watch falls too far behind it lists again, reporting as gone the
// pods that disappeared meanwhile.
func (s *Pods) WatchPods(ctx context.Context, nodeName string, onChange func(pod *corev1.Pod, gone bool)) error {
	known := map[types.UID]*corev1.Pod{}
	ch, err := s.listAndWatch(ctx, nodeName, known, onChange)
	if err != nil {
		return fmt.Errorf("watch pods: %w", err)
	}
	go s.follow(ctx, ch, nodeName, known, onChange)
	return nil
}

// listAndWatch reports the node's pods as they are now, and as gone the
// known ones that are not there any more, then watches from that version.
func (s *Pods) listAndWatch(ctx context.Context, node string, known map[types.UID]*corev1.Pod, onChange func(*corev1.Pod, bool)) (<-chan objstore.Event[*corev1.Pod], error) {
	pods, rv := s.store.Pods.List("")
	seen := map[types.UID]bool{}
	for _, p := range pods {
		if p.Spec.NodeName != node {
			continue
		}
		seen[p.UID] = true
		known[p.UID] = p
		onChange(p, false)
	}
	for uid, p := range known {
		if !seen[uid] {
			delete(known, uid)
			onChange(p, true)
		}
	}
	return s.store.Pods.Watch(ctx, rv)
}

func (s *Pods) follow(ctx context.Context, ch <-chan objstore.Event[*corev1.Pod], node string, known map[types.UID]*corev1.Pod, onChange func(*corev1.Pod, bool)) {
	for {
		for ev := range ch {
			if ev.Type == watch.Error {
				break
			}
			pod := ev.Object
			if pod.Spec.NodeName != node {
				continue
			}
			if ev.Type == watch.Deleted {
				delete(known, pod.UID)
				onChange(pod, true)
				continue
			}
			known[pod.UID] = pod
			onChange(pod, false)
		}
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("pod watch fell behind; listing again")
		var err error
		if ch, err = s.listAndWatch(ctx, node, known, onChange); err != nil {
			if !errors.Is(err, context.Canceled) {
				s.log.Error("watch pods", "err", err)
			}
			return
		}
	}
}

package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// requestTimeout bounds one request of the node agent's: the interfaces
// it implements have no context (the agent also writes while it shuts
// down, after Run's context ended).
const requestTimeout = 30 * time.Second

// Pods is the kube-apiserver's side of a node's pods, as the node agent
// uses it: node.PodSource (a watch of the pods bound to the node) and
// node.PodWriter (pods/status, the final delete).
type Pods struct {
	client corev1client.PodsGetter
	log    *slog.Logger

	mu sync.Mutex
	// written is the last status written of each pod, the base of the
	// next patch.
	written map[types.UID]*corev1.PodStatus
}

// NewPods reads and writes pods through client; log reports what the
// watch could not deliver (nil discards).
func NewPods(client corev1client.PodsGetter, log *slog.Logger) *Pods {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Pods{client: client, log: log, written: map[types.UID]*corev1.PodStatus{}}
}

// WatchPods calls onChange with every pod bound to nodeName (field
// selector spec.nodeName, which the Node authorizer requires of a node's
// list and watch) as it is now, and with gone set once one was removed,
// until ctx ends. The calls come from one goroutine, in the order of the
// API server's events; after a watch that fell behind, the list that
// follows reports the pods removed meanwhile as gone. An error means the
// node cannot list its pods at all (credentials, authorization).
func (p *Pods) WatchPods(ctx context.Context, nodeName string, onChange func(pod *corev1.Pod, gone bool)) error {
	sel := fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
	pods := p.client.Pods(metav1.NamespaceAll)
	// Once, so that a credential that cannot list fails the start
	// instead of a reflector retrying forever.
	if _, err := pods.List(ctx, metav1.ListOptions{FieldSelector: sel, Limit: 1}); err != nil {
		return fmt.Errorf("list the pods of node %s: %w", nodeName, err)
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return pods.Watch(ctx, o)
		},
	}
	// A plain informer (not a shared one) calls its handler from its own
	// processing loop: one goroutine, in order.
	_, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    &corev1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { onChange(obj.(*corev1.Pod).DeepCopy(), false) },
			UpdateFunc: func(_, obj any) { onChange(obj.(*corev1.Pod).DeepCopy(), false) },
			DeleteFunc: func(obj any) {
				if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = tomb.Obj
				}
				pod, ok := obj.(*corev1.Pod)
				if !ok {
					p.log.Warn("pod watch: deleted object is no pod", "object", fmt.Sprintf("%T", obj))
					return
				}
				p.forget(pod.UID)
				onChange(pod.DeepCopy(), true)
			},
		},
	})
	go ctrl.RunWithContext(ctx)
	return nil
}

// UpdatePodStatus writes pod.Status to pods/status as a strategic-merge
// patch from the status last written to this one, as the kubelet's status
// manager does: what others wrote (the scheduler's PodScheduled, a
// readiness gate's condition) is not in the patch and stays, since
// conditions merge by type. The patch carries the pod's UID, so it fails
// on a pod of the same name made since. Only the status is written: the
// deletion marks the agent sets when it drains its pods are its own.
func (p *Pods) UpdatePodStatus(pod *corev1.Pod) error {
	p.mu.Lock()
	last := p.written[pod.UID]
	p.mu.Unlock()
	patch, changed, err := statusPatch(pod.UID, last, &pod.Status)
	if err != nil {
		return fmt.Errorf("pod %s/%s: status patch: %w", pod.Namespace, pod.Name, err)
	}
	if !changed {
		return nil
	}
	err = retryTransient(func(ctx context.Context) error {
		_, err := p.client.Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		return err
	})
	if err != nil {
		if uidChanged(err) {
			return apierrors.NewConflict(corev1.Resource("pods"), pod.Name,
				fmt.Errorf("pod %s/%s was replaced: the status is of uid %s", pod.Namespace, pod.Name, pod.UID))
		}
		return err
	}
	p.mu.Lock()
	p.written[pod.UID] = pod.Status.DeepCopy()
	p.mu.Unlock()
	return nil
}

// uidChanged reports the API server's answer to a patch whose UID
// precondition failed: metadata.uid is immutable, so the patched object
// is Invalid.
func uidChanged(err error) bool {
	var st apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &st) || st.Status().Details == nil {
		return false
	}
	for _, c := range st.Status().Details.Causes {
		if c.Field == "metadata.uid" {
			return true
		}
	}
	return false
}

// statusPatch is the two-way strategic-merge patch from last (nil: nothing
// written yet) to next, with the UID as a precondition; changed is false
// when the patch would change nothing.
func statusPatch(uid types.UID, last, next *corev1.PodStatus) (patch []byte, changed bool, err error) {
	from := corev1.Pod{}
	if last != nil {
		from.Status = *last
	}
	oldJSON, err := json.Marshal(from)
	if err != nil {
		return nil, false, err
	}
	// The UID only in the new side puts it in every patch: the API server
	// then refuses the patch of an object with another UID.
	newJSON, err := json.Marshal(corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: *next})
	if err != nil {
		return nil, false, err
	}
	patch, err = strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, corev1.Pod{})
	if err != nil {
		return nil, false, err
	}
	onlyUID := fmt.Sprintf(`{"metadata":{"uid":%q}}`, uid)
	return patch, string(patch) != onlyUID, nil
}

// RemovePod deletes the pod for good once it stopped, as the kubelet
// does: grace period 0, preconditioned on its UID, so a pod of the same
// name made since is left alone (that conflict is not an error).
func (p *Pods) RemovePod(namespace, name string, uid types.UID) error {
	err := retryTransient(func(ctx context.Context) error {
		return p.client.Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			Preconditions:      &metav1.Preconditions{UID: &uid},
		})
	})
	if err == nil || apierrors.IsNotFound(err) {
		p.forget(uid)
	}
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// retryTransient runs a write, again after a failure that says nothing
// about the write itself (the API server restarting, overloaded, a
// connection dropped), for about a second and a half: the agent writes a
// pod's status when it changes and removes a pod once, so a write lost
// here would leave a stale status, or a pod terminating for good.
func retryTransient(write func(context.Context) error) error {
	return retry.OnError(retry.DefaultBackoff, transient, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		return write(ctx)
	})
}

func transient(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) ||
		utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err)
}

func (p *Pods) forget(uid types.UID) {
	p.mu.Lock()
	delete(p.written, uid)
	p.mu.Unlock()
}

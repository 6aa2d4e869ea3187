// Package withdrawal is the node's view of a cluster's EndpointSlices,
// for holding a liveness or startup kill until the pod's endpoint is
// withdrawn (node.EndpointWithdrawal): the node agent writes the pod's
// Ready=False through pods/status before such a kill, and the
// EndpointSlice controller follows that write a little later; a kubelet
// kills first and the endpoint follows, so requests still reach the dying
// container meanwhile. Package node/kube runs it.
package withdrawal

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	discoveryclient "k8s.io/client-go/kubernetes/typed/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// DefaultTimeout bounds how long a liveness or startup kill waits
// for the pod's endpoint to turn not ready: the EndpointSlice controller
// follows a status write within tens of milliseconds when it is well; a
// kill is held up, never called off.
const DefaultTimeout = 2 * time.Second

// Role names the ClusterRole that lets nodes read EndpointSlices, as
// docs/kubernetes.md gives it (and podgate's control plane installs it:
// controlplane.NodeEndpointSlicesRole).
const Role = "podgate:node-endpointslices"

// readyAddrIndex indexes EndpointSlices by "NAMESPACE/ADDRESS" of every
// endpoint that is ready.
const readyAddrIndex = "readyAddress"

// Watch is the EndpointSlices of every namespace, as
// node.EndpointWithdrawal: a kill waits in WaitWithdrawn until the
// EndpointSlice controller has taken the pod's address out of service.
type Watch struct {
	inf     cache.SharedIndexInformer
	timeout time.Duration
	log     *slog.Logger

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
}

// New watches the EndpointSlices of every namespace through client (list
// and watch: ClusterRole Role); a wait gives up after timeout (0:
// DefaultTimeout). Start runs the watch.
func New(client discoveryclient.EndpointSlicesGetter, timeout time.Duration, log *slog.Logger) (*Watch, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.EndpointSlices(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.EndpointSlices(metav1.NamespaceAll).Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &discoveryv1.EndpointSlice{}, 0, cache.Indexers{readyAddrIndex: readyAddresses})
	w := &Watch{inf: inf, timeout: timeout, log: log, changed: make(chan struct{})}
	ring := func(any) { w.ring() }
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: ring, UpdateFunc: func(_, o any) { ring(o) }, DeleteFunc: ring}); err != nil {
		return nil, fmt.Errorf("EndpointSlice informer: %w", err)
	}
	return w, nil
}

// readyAddresses are the index keys of an EndpointSlice: its ready
// endpoints' addresses in its namespace. A Ready left unset counts as
// ready, as the API's consumers read it.
func readyAddresses(obj any) ([]string, error) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil, nil
	}
	var keys []string
	for _, ep := range s.Endpoints {
		if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
			continue
		}
		for _, a := range ep.Addresses {
			keys = append(keys, s.Namespace+"/"+a)
		}
	}
	return keys, nil
}

// Start runs the watch until ctx ends; done is closed once it has
// stopped. It does not wait for the first list: until then a kill is not
// held.
func (w *Watch) Start(ctx context.Context) (done <-chan struct{}) {
	d := make(chan struct{})
	go func() {
		defer close(d)
		w.inf.RunWithContext(ctx)
	}()
	go func() {
		// Synced is a change too: waiters looking before it learn the
		// answer is now known.
		if cache.WaitForCacheSync(ctx.Done(), w.inf.HasSynced) {
			w.ring()
		}
	}()
	return d
}

// Synced reports whether the first list arrived.
func (w *Watch) Synced() bool { return w.inf.HasSynced() }

func (w *Watch) ring() {
	w.mu.Lock()
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
}

func (w *Watch) next() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed
}

// serving reports whether an EndpointSlice of namespace lists ip ready,
// for pod name or for no pod in particular.
func (w *Watch) serving(namespace, name string, ip netip.Addr) bool {
	objs, err := w.inf.GetIndexer().ByIndex(readyAddrIndex, namespace+"/"+ip.String())
	if err != nil {
		return false
	}
	for _, o := range objs {
		s := o.(*discoveryv1.EndpointSlice)
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			if ep.TargetRef != nil && ep.TargetRef.Kind == "Pod" && ep.TargetRef.Name != name {
				continue // a stale entry of an earlier pod with the address
			}
			for _, a := range ep.Addresses {
				if a == ip.String() {
					return true
				}
			}
		}
	}
	return false
}

// WaitWithdrawn returns once no EndpointSlice lists address ip of pod
// namespace/name as ready, when ctx ends, or after the timeout (logged:
// the kill goes ahead while the endpoint may still take traffic). It
// does not wait before the first list has arrived.
func (w *Watch) WaitWithdrawn(ctx context.Context, namespace, name string, ip netip.Addr) {
	if !ip.IsValid() {
		return
	}
	begin := time.Now()
	t := time.NewTimer(w.timeout)
	defer t.Stop()
	for {
		ch := w.next()
		if !w.Synced() || !w.serving(namespace, name, ip) {
			if waited := time.Since(begin); waited > 10*time.Millisecond {
				w.log.Debug("endpoint withdrawn before the kill", "pod", namespace+"/"+name, "ip", ip, "waited", waited.Round(time.Millisecond))
			}
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		case <-t.C:
			w.log.Warn("the pod's endpoint is still ready; killing anyway", "pod", namespace+"/"+name, "ip", ip, "waited", w.timeout)
			return
		}
	}
}

// CanRead asks the API server whether the client may list EndpointSlices:
// without the ClusterRole a watch would fail forever, and the node kills
// without waiting.
func CanRead(ctx context.Context, client discoveryclient.EndpointSlicesGetter) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := client.EndpointSlices(metav1.NamespaceAll).List(ctx, metav1.ListOptions{Limit: 1})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsForbidden(err):
		return false, nil
	}
	return false, err
}

package gatestatus

import (
	"net/netip"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// podState is the latest state of one pod of the node, as the node's
// informer delivered it.
type podState struct {
	pod *corev1.Pod
	// rv is the resource version of that state: the pod's, or for a
	// deletion the version the deletion was seen at.
	rv uint64
	// deleted: the pod is gone from the API; pod is its last state.
	deleted bool
	// since is when a deleted pod was seen gone, for forgetting it.
	since time.Time
}

// podCache holds the node's pods as the informer's handlers delivered
// them, in order, so that a state and the node-wide version seenRV are
// read together: every state of a pod up to seenRV is in the cache. The
// informer's own LastSyncResourceVersion can run ahead of what its
// handlers delivered, so it is not used.
type podCache struct {
	now func() time.Time

	mu      sync.Mutex
	byKey   map[string]*podState // namespace/name
	seenRV  uint64
	changed chan struct{} // closed on the next change, then replaced
	synced  bool
}

func newPodCache(now func() time.Time) *podCache {
	return &podCache{now: now, byKey: map[string]*podState{}, changed: make(chan struct{})}
}

// rvOf parses a resource version; the API server's are integers (etcd's
// revision), and this service only compares the ones it hands out.
func rvOf(s string) uint64 {
	v, _ := strconv.ParseUint(s, 10, 64)
	return v
}

func keyOf(namespace, name string) string { return namespace + "/" + name }

// handler is the informer's event handler: it feeds the cache.
func (c *podCache) handler() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { c.put(o) },
		UpdateFunc: func(_, o any) { c.put(o) },
		DeleteFunc: c.remove,
	}
}

func (c *podCache) put(o any) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	rv := rvOf(p.ResourceVersion)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byKey[keyOf(p.Namespace, p.Name)] = &podState{pod: p, rv: rv}
	c.seenRV = max(c.seenRV, rv)
	c.ringLocked()
}

// remove records a deletion. A deletion seen by the watch carries the
// version it happened at; one found by a relist (DeletedFinalStateUnknown)
// does not, and takes the latest version seen. A watcher ends at a
// deletion whatever its version (see serveWatch), so no version is made
// up here.
func (c *podCache) remove(o any) {
	tomb, fromRelist := o.(cache.DeletedFinalStateUnknown)
	if fromRelist {
		o = tomb.Obj
	}
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	rv := c.seenRV
	if !fromRelist {
		rv = rvOf(p.ResourceVersion)
	}
	c.byKey[keyOf(p.Namespace, p.Name)] = &podState{pod: p, rv: rv, deleted: true, since: c.now()}
	c.seenRV = max(c.seenRV, rv)
	c.ringLocked()
}

func (c *podCache) ringLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *podCache) setSynced() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.synced = true
	c.ringLocked()
}

func (c *podCache) isSynced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.synced
}

// get is the pod's latest state (nil if never seen), the node-wide
// version it is consistent with, and a channel closed on the next change.
func (c *podCache) get(key string) (*podState, uint64, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var st *podState
	if s := c.byKey[key]; s != nil {
		cp := *s
		st = &cp
	}
	return st, c.seenRV, c.changed
}

// withIP are the pods of the node that may be the caller at ip: their
// status.podIPs hold it, they run in a network of their own (not
// hostNetwork) and have not finished.
func (c *podCache) withIP(ip netip.Addr) ([]*corev1.Pod, bool, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*corev1.Pod
	for _, s := range c.byKey {
		if !s.deleted && callerCandidate(s.pod, ip) {
			out = append(out, s.pod)
		}
	}
	return out, c.synced, c.changed
}

func callerCandidate(p *corev1.Pod, ip netip.Addr) bool {
	if p.Spec.HostNetwork || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	ips := []string{p.Status.PodIP}
	for _, a := range p.Status.PodIPs {
		ips = append(ips, a.IP)
	}
	for _, s := range ips {
		if a, err := netip.ParseAddr(s); err == nil && a.Unmap() == ip {
			return true
		}
	}
	return false
}

// live are the pods not deleted, for the periodic checks.
func (c *podCache) live() []*corev1.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(c.byKey))
	for _, s := range c.byKey {
		if !s.deleted {
			out = append(out, s.pod)
		}
	}
	return out
}

// forget drops deleted pods seen gone before cutoff: every watch of them
// has ended by then (a watch ends at its pod's deletion).
func (c *podCache) forget(cutoff time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, s := range c.byKey {
		if s.deleted && s.since.Before(cutoff) {
			delete(c.byKey, k)
		}
	}
}

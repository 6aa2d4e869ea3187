package activator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
)

// Target routes the requests of one revision or workload to its pods.
// It is an http.Handler. Feed it pods with Update or Run; Close it when
// done (it stops the health checks).
type Target struct {
	name string
	cfg  Config

	ctx     context.Context // probers' lifetime
	cancel  context.CancelFunc
	probers sync.WaitGroup
	telling sync.WaitGroup // gates being told they get no more traffic

	mu     sync.Mutex
	bal    balancer
	byName map[string]*backend
	ready  int
	closed bool
	// unroutable, when set, is why the source cannot route the target at
	// all (SetUnroutable): requests get it at once instead of a hold.
	unroutable *UnroutableError
	// changed gets a signal whenever ready changes; see Changed.
	changed chan struct{}
}

// Errors a request can meet before it reaches a backend.
var (
	errQueueFull = errors.New("pending request queue full")
	errTimeout   = errors.New("activator request timeout")
	errClosed    = errors.New("activator shutting down")
)

// NewTarget returns a target named name (used in logs and metrics) with
// no pods.
func NewTarget(name string, cfg Config) (*Target, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("activator target %q: %w", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &Target{
		name:    name,
		cfg:     cfg,
		ctx:     ctx,
		cancel:  cancel,
		bal:     balancer{capacity: cfg.ContainerConcurrency, depth: cfg.QueueDepth},
		byName:  map[string]*backend{},
		changed: make(chan struct{}, 1),
	}
	t.cfg.Metrics.Backends(name, 0, 0)
	t.cfg.Metrics.QueueDepth(name, 0)
	return t, nil
}

// Changed signals, coalesced, that the number of backends taking traffic
// changed; read Status for the new state. Service status follows it, so
// that what `podgate get services` says is what traffic does.
func (t *Target) Changed() <-chan struct{} { return t.changed }

// Name is the target's name.
func (t *Target) Name() string { return t.name }

// Run applies the snapshots of src until its channel closes (when ctx is
// done).
func (t *Target) Run(ctx context.Context, src Backends) {
	for pods := range src.Pods(ctx) {
		t.Update(pods)
	}
}

// Update replaces the target's pods with a snapshot. New pods are health
// checked at once; a pod whose endpoint turns unready is checked again at
// once; a pod that left or is terminating gets no new request from now on.
// Held requests are released here if a pod became usable.
func (t *Target) Update(pods []Pod) {
	t.mu.Lock()
	unrouted := t.updateLocked(pods)
	t.mu.Unlock()
	t.tellUnroutedAsync(unrouted)
}

// updateLocked is Update; it returns the pods whose gates are to be told
// that they get no more traffic.
func (t *Target) updateLocked(pods []Pod) []Pod {
	if t.closed {
		return nil
	}
	var unrouted []Pod
	seen := make(map[string]bool, len(pods))
	for _, p := range pods {
		if p.Name == "" || seen[p.Name] {
			continue // a source bug; the first one wins
		}
		seen[p.Name] = true
		b := t.byName[p.Name]
		if b != nil && (b.pod.Addr != p.Addr || b.pod.Direct != p.Direct || (b.pod.Terminating && !p.Terminating)) {
			// A new pod under an old name (a terminating pod never comes
			// back in Kubernetes): start afresh, with a new prober.
			t.removeLocked(b)
			b = nil
		}
		if b == nil {
			b = t.addLocked(p)
		} else {
			t.changeLocked(b, p)
		}
		if t.leavingLocked(b) {
			unrouted = append(unrouted, b.pod)
		}
	}
	for name, b := range t.byName {
		if !seen[name] {
			t.removeLocked(b)
		}
	}
	t.refreshLocked()
	return unrouted
}

func (t *Target) addLocked(p Pod) *backend {
	ctx, stop := context.WithCancel(t.ctx)
	b := &backend{name: p.Name, addr: p.Addr, direct: p.Direct, pod: p, everReady: p.Ready, kick: make(chan struct{}, 1), stop: stop}
	b.fast = t.newFast(b)
	b.proxy = t.newProxy(b)
	t.byName[p.Name] = b
	t.bal.backends = append(t.bal.backends, b)
	t.cfg.Logger.Info("backend added", "target", t.name, "pod", p.Name, "addr", p.Addr,
		"endpointReady", p.Ready, "fastPath", p.FastPath)
	if p.Terminating {
		return b // never usable: no need to ask its gate
	}
	t.probers.Add(1)
	go t.runProber(ctx, b)
	return b
}

func (t *Target) changeLocked(b *backend, p Pod) {
	old := b.pod
	b.pod = p
	if p.Ready {
		b.everReady = true
	}
	if old.Ready != p.Ready || old.Terminating != p.Terminating {
		t.cfg.Logger.Info("endpoint changed", "target", t.name, "pod", p.Name,
			"ready", p.Ready, "terminating", p.Terminating)
	}
	switch {
	case p.Terminating && !old.Terminating:
		b.stop()
	case old.Ready && !p.Ready:
		b.probeNow() // re-probe a pod that turns unready
	case !old.Ready && p.Ready && !b.gateReady:
		// Kubernetes saw the gate ready (its readiness probe is the
		// gate's): ask now rather than at the next tick, so held requests
		// go as soon as the endpoint turns ready.
		b.probeNow()
	}
}

func (t *Target) removeLocked(b *backend) {
	b.removed = true
	b.stop()
	if b.fast != nil {
		b.fast.Close()
	}
	delete(t.byName, b.name)
	t.bal.drop(b)
	t.noteRoutableLocked(b, false)
	t.cfg.Logger.Info("backend removed", "target", t.name, "pod", b.name)
}

// refreshLocked hands freed or new capacity to held requests and reports
// the counts.
func (t *Target) refreshLocked() {
	ready := 0
	for _, b := range t.bal.backends {
		u := b.usable()
		if u {
			ready++
		}
		// Before the dispatch: a pod comes in before a request is
		// released to it.
		t.noteRoutableLocked(b, u)
	}
	t.bal.dispatch()
	if ready != t.ready {
		// Coalesced: a reader that falls behind sees one signal and reads
		// the newest Status.
		select {
		case t.changed <- struct{}{}:
		default:
		}
	}
	t.ready = ready
	t.cfg.Metrics.Backends(t.name, ready, len(t.bal.backends))
	t.cfg.Metrics.QueueDepth(t.name, t.bal.waiters.Len())
}

func (t *Target) generation(b *backend) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return b.gen
}

// gateAnswered records a health check's result.
func (t *Target) gateAnswered(b *backend, gen uint64, ok bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b.removed || b.gen != gen {
		return
	}
	b.probes++
	if err != nil {
		b.lastError = err.Error()
	} else {
		b.lastError = ""
	}
	if b.gateReady == ok {
		return
	}
	b.gateReady = ok
	if ok {
		t.cfg.Logger.Info("gate ready", "target", t.name, "pod", b.name)
	} else {
		t.cfg.Logger.Info("gate not ready", "target", t.name, "pod", b.name, "err", err)
	}
	t.refreshLocked()
}

// connectFailed marks b unready after a proxied request could not reach
// its gate: it stays out until a health check answers ready again.
func (t *Target) connectFailed(b *backend, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b.removed {
		return
	}
	b.gen++
	b.lastError = err.Error()
	if b.gateReady {
		b.gateReady = false
		t.cfg.Logger.Warn("backend unreachable", "target", t.name, "pod", b.name, "err", err)
		t.refreshLocked()
	}
	b.probeNow()
}

// acquire returns a backend with a slot taken for the request, waiting in
// the queue while there is none. ahead puts a request that already waited
// (its connect failed) before newer ones. rec hears the decisions.
func (t *Target) acquire(ctx context.Context, ahead bool, rec *requestRecord) (*backend, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, errClosed
	}
	if u := t.unroutable; u != nil {
		t.mu.Unlock()
		return nil, u
	}
	if b := t.bal.tryAcquire(ahead); b != nil {
		t.mu.Unlock()
		rec.routed(b)
		return b, nil
	}
	w := t.bal.hold(ahead)
	if w == nil {
		t.mu.Unlock()
		return nil, errQueueFull
	}
	t.cfg.Metrics.QueueDepth(t.name, t.bal.waiters.Len())
	t.mu.Unlock()
	rec.held()

	select {
	case b := <-w.ch:
		if b == nil {
			return nil, t.wokenErr()
		}
		rec.routed(b)
		return b, nil
	case <-ctx.Done():
	}
	t.mu.Lock()
	if t.bal.leave(w) {
		t.cfg.Metrics.QueueDepth(t.name, t.bal.waiters.Len())
		t.mu.Unlock()
		return nil, context.Cause(ctx)
	}
	t.mu.Unlock()
	// Given a backend in the same instant: hand the slot back.
	if b := <-w.ch; b != nil {
		t.release(b)
	}
	return nil, context.Cause(ctx)
}

// wokenErr is why a held request was woken without a backend: the
// target closed, or its source cannot route it.
func (t *Target) wokenErr() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.unroutable == nil {
		// The latter: routable again in the same instant; rare enough
		// not to requeue.
		return errClosed
	}
	return t.unroutable
}

// UnroutableError is why a target cannot route any request (a Service
// whose pods have no gate and no port to serve HTTP on): answered 503 at
// once, not held until the timeout.
type UnroutableError struct{ Reason string }

func (e *UnroutableError) Error() string { return e.Reason }

// SetUnroutable says that the source cannot route the target at all, and
// why (nil: it can again). Held requests and new ones get 503 with the
// reason at once: waiting would not help until the Service changes.
func (t *Target) SetUnroutable(err *UnroutableError) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err == nil {
		t.unroutable = nil
		return
	}
	if same := t.unroutable; same != nil && *same == *err {
		return
	}
	t.unroutable = err
	if t.closed {
		return
	}
	t.cfg.Logger.Warn("target cannot be routed", "target", t.name, "reason", err.Reason)
	t.bal.wakeAll()
	t.cfg.Metrics.QueueDepth(t.name, 0)
}

// Unroutable is why the target cannot be routed (SetUnroutable), nil
// when it can.
func (t *Target) Unroutable() *UnroutableError {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.unroutable
}

// release frees the slot of a finished request. The last request to a
// pod that gets no more traffic tells its gate so, from the request's own
// goroutine (the server waits for it on shutdown).
func (t *Target) release(b *backend) {
	t.mu.Lock()
	b.inflight--
	if t.bal.waiters.Len() > 0 {
		t.bal.dispatch()
		t.cfg.Metrics.QueueDepth(t.name, t.bal.waiters.Len())
	}
	tell := t.leavingLocked(b)
	pod := b.pod
	t.mu.Unlock()
	if tell {
		t.tellUnrouted(pod)
	}
}

// Close stops the health checks, answers held requests with 503 and closes
// idle connections. Requests in flight finish. The target sends nothing
// more anywhere: the gates of pods with nothing in flight are told at once,
// the others when their last request ends.
func (t *Target) Close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	t.bal.wakeAll()
	var unrouted []Pod
	for _, b := range t.bal.backends {
		if t.leavingLocked(b) {
			unrouted = append(unrouted, b.pod)
		}
	}
	t.mu.Unlock()
	t.tellUnroutedAsync(unrouted)
	t.cancel()
	t.probers.Wait()
	t.telling.Wait()
	t.mu.Lock()
	for _, b := range t.bal.backends {
		if b.fast != nil {
			b.fast.Close()
		}
	}
	t.mu.Unlock()
	for _, rt := range []http.RoundTripper{t.cfg.Transport, t.cfg.ProbeTransport} {
		if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
	}
}

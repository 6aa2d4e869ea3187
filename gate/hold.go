package gate

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/podgate/podgate/gate/contract"
)

// While the pod is not ready (docs/gate.md, "While the pod is not
// ready"): a request that would be proxied waits at the door instead of
// reaching the serving container. Knative's routers keep sending to a pod
// until its endpoint is withdrawn, which follows the pod's Ready condition
// only after the kubelet's next probe of the gate; and Knative's activator
// does not retry a request a pod answered with a 5xx, so the gate cannot
// turn requests away. A held request goes on when
//
//   - every container is ready again: it is proxied;
//   - the pod is out of the endpoints (its Ready condition is False, or it
//     is being deleted) and a hand-off URL is set: it goes to Knative's
//     activator, which routes it to a ready pod or holds it until one is;
//   - the gate drains without a hand-off: it is proxied (the pod is going
//     away; the ride-through still holds it while the container refuses);
//   - its time limit passes or its client leaves: the answer the gate
//     gives for those anyway.
//
// A request the activator handed back (it had not yet seen the endpoint
// go) carries the marker; it is handed again only after a backoff that
// doubles with each hand-off, and never more than contract.MaxHandoffs
// times in all.

// handoffBackoff is how long after its arrival a request handed off n
// times already may be handed again: at once the first time, then from
// 100 ms doubling.
func handoffBackoff(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	return firstHandoffBackoff << (n - 1)
}

const firstHandoffBackoff = 100 * time.Millisecond

// door is the gate's proxy.Door.
type door struct{ g *Gate }

// Open: every container is ready, or the gate drains (a request that won
// its concurrency slot then goes to the container rather than back to
// the door, where the drain would send it on anyway).
func (d door) Open() bool { return d.g.agg.Ready() || d.g.drainer.Draining() }

// Wait holds r while the containers are not ready, until they are, or
// it may be handed off, or ctx ends.
func (d door) Wait(ctx context.Context, r *http.Request, arrived time.Time) (http.Header, error) {
	g := d.g
	if g.agg.Ready() {
		return nil, nil
	}
	handed := 0
	if v := r.Header.Get(contract.HandoffHeader); v != "" {
		_, handed, _ = contract.ParseHandoff(v)
	}
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	held := false
	defer func() {
		if held {
			g.holds.end(g)
		}
	}()
	for {
		changed := g.readinessSignal() // before the state is read
		if g.agg.Ready() {
			return nil, nil
		}
		draining := g.drainer.Draining()
		var due <-chan time.Time
		switch {
		case g.cfg.HandoffURL != "" && handed < contract.MaxHandoffs && (draining || g.podOut.Load()):
			wait := handoffBackoff(handed) - g.clock.Since(arrived)
			if wait <= 0 {
				g.metrics.HandedOff()
				return g.handoffHeaders(handed + 1), nil
			}
			if timer == nil {
				timer = g.clock.NewTimer(wait)
			}
			due = timer.C()
		case draining:
			return nil, nil
		}
		if !held {
			held = true
			g.holds.start(g)
		}
		select {
		case <-changed:
		case <-due:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// handoffHeaders are what a request handed off for the n-th time carries:
// Knative's routing headers and the marker.
func (g *Gate) handoffHeaders(n int) http.Header {
	return http.Header{
		contract.KnativeNamespaceHeader: {g.cfg.Namespace},
		contract.KnativeRevisionHeader:  {g.cfg.Revision},
		contract.HandoffHeader:          {contract.FormatHandoff(g.cfg.Pod, n)},
	}
}

// holdLog counts the requests held at the door and logs when holding
// starts and ends, not once per request.
type holdLog struct {
	mu      sync.Mutex
	n       int // held now
	episode int // held since holding started
}

func (h *holdLog) start(g *Gate) {
	g.metrics.ReadinessHoldStarted()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	h.episode++
	if h.n == 1 {
		g.log.Info("holding requests: not every container is ready", "notReady", strings.Join(g.agg.NotReady(), ", "),
			"handoff", g.cfg.HandoffURL != "", "podOutOfEndpoints", g.podOut.Load())
	}
}

func (h *holdLog) end(g *Gate) {
	g.metrics.ReadinessHoldEnded()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n--
	if h.n == 0 {
		g.log.Info("no request held any more", "heldSinceHoldingStarted", h.episode)
		h.episode = 0
	}
}

// RequestsHeld is how many requests wait at the door for the pod to be
// ready.
func (g *Gate) RequestsHeld() int {
	g.holds.mu.Lock()
	defer g.holds.mu.Unlock()
	return g.holds.n
}

package server

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/activator/kubebackends"
)

// On a cluster where this activator is the pods' only router
// (Config.OnlyRouter without fixed routes: `podgate cluster up` without
// --knative), a target tells the gates of the pods it follows that it
// sends them nothing more (package activator). A pod of a Service that
// has no open target — idle, never requested, or no Service at all —
// gets nothing from this activator either, so its gate may be told as
// soon as the pod turns terminating: gateTeller does that, from the
// Pod informer, so that an idle pod's deletion ends its drain at once
// instead of after the quiet period. And when the activator stops, every
// gate that drains already is told (?if=draining): a node that stops its
// pods (`cluster down`) does not mark them deleted in the API, and this
// activator sends nothing anywhere any more. A gate that is not draining
// then ignores it: its pod outlives this activator, whose successor
// routes to it.

// tellTimeout bounds one confirmation; tellParallel is how many go at once.
const (
	tellTimeout  = time.Second
	tellParallel = 16
)

type gateTeller struct {
	feed *kubebackends.Feed
	rt   http.RoundTripper
	log  func(msg string, args ...any)
	warn func(msg string, args ...any)

	mu      sync.Mutex
	told    map[types.UID]bool
	stopped bool // stop's sweep ran: run's do nothing (no Add after the Wait)
	sem     chan struct{}
	wg      sync.WaitGroup
}

func newGateTeller(cfg *Config, feed *kubebackends.Feed) *gateTeller {
	dial := cfg.Dial
	if dial == nil {
		d := &net.Dialer{Timeout: tellTimeout}
		dial = d.DialContext
	}
	return &gateTeller{
		feed: feed,
		rt:   &http.Transport{DialContext: dial, DisableKeepAlives: true, Proxy: nil},
		log:  cfg.Logger.Info, warn: cfg.Logger.Warn,
		told: map[types.UID]bool{},
		sem:  make(chan struct{}, tellParallel),
	}
}

// run tells terminating, unfollowed pods' gates until ctx ends, looking
// whenever a pod or slice changed.
func (g *gateTeller) run(ctx context.Context) {
	if !g.feed.WaitForSync(ctx) {
		return
	}
	for {
		g.sweep(false)
		select {
		case <-ctx.Done():
			return
		case <-g.feed.GatesChanged():
		}
	}
}

// sweep tells each gate not told yet: a terminating pod that no open
// target follows, or, when final (the activator stopping, its targets
// closed), every pod — a pod not terminating on the condition that its
// gate drains already.
func (g *gateTeller) sweep(final bool) {
	gates := g.feed.Gates()
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		return
	}
	g.stopped = final
	present := make(map[types.UID]bool, len(gates))
	var tell []kubebackends.Gate
	for _, gt := range gates {
		present[gt.UID] = true
		if g.told[gt.UID] || !(final || gt.Pod.Terminating) {
			continue
		}
		if gt.Pod.Terminating {
			// Told once, by its target if one followed it as it turned
			// terminating (once the target's requests to it ended): not
			// again here when the target drops it. A conditional one
			// (final, not terminating) is not remembered.
			g.told[gt.UID] = true
			if gt.Followed && !final {
				continue
			}
		}
		tell = append(tell, gt)
	}
	for uid := range g.told {
		if !present[uid] {
			delete(g.told, uid)
		}
	}
	// Added under the lock: stop's Wait comes after every Add.
	g.wg.Add(len(tell))
	g.mu.Unlock()
	for _, gt := range tell {
		g.sem <- struct{}{}
		go func() {
			defer func() { <-g.sem; g.wg.Done() }()
			g.tell(gt)
		}()
	}
}

func (g *gateTeller) tell(gt kubebackends.Gate) {
	ctx, cancel := context.WithTimeout(context.Background(), tellTimeout)
	defer cancel()
	why := "the pod is terminating and no open target routes to it"
	if !gt.Pod.Terminating {
		why = "the activator stops (counts only if the gate drains)"
	}
	answer, err := activator.TellGateUnrouted(ctx, g.rt, gt.Pod, !gt.Pod.Terminating)
	if err != nil {
		g.warn("could not tell the gate it gets no more traffic: it drains for its full quiet period",
			"pod", gt.Pod.Name, "why", why, "err", err)
		return
	}
	g.log("told the gate it gets no more traffic", "pod", gt.Pod.Name, "why", why, "answer", answer)
}

// stop tells every gate not told yet (see sweep), waits for every
// confirmation in flight, and closes the transport's connections.
func (g *gateTeller) stop() {
	g.sweep(true)
	g.wg.Wait() // run's sweeps add nothing any more
	if c, ok := g.rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

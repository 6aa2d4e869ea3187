package kubeactivator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/activator/kubebackends"
	"github.com/podgate/podgate/activator/prommetrics"
	"github.com/podgate/podgate/gate/contract"
)

// Why a request got no target.
var (
	errUnknownService = errors.New("unknown Service")
	errStopping       = errors.New("activator shutting down")
)

// targets holds one activator target per Service in use. A target is made
// on the first request for its Service and closed once it has had no
// request, in flight or held, for the idle timeout: its pods' health
// checks stop with it, so the work the activator does follows the
// Services in use, not the Services that exist.
type targets struct {
	cfg     *Config
	cluster *kubebackends.Feed
	metrics *prommetrics.Metrics
	own     *ownMetrics

	mu     sync.Mutex
	byKey  map[string]*entry // NAMESPACE/NAME
	closed bool
}

// entry is a Service's target and what keeps it open.
type entry struct {
	key    string
	target *activator.Target
	// stopFeed ends the feed from the informers; fed is closed once it has.
	stopFeed context.CancelFunc
	fed      chan struct{}
	// active counts the requests being served or held; idleSince is when
	// it last went to 0.
	active    int
	idleSince time.Time
}

func newTargets(cfg *Config, cluster *kubebackends.Feed, m *prommetrics.Metrics, own *ownMetrics) *targets {
	return &targets{cfg: cfg, cluster: cluster, metrics: m, own: own, byKey: map[string]*entry{}}
}

// acquire returns the Service's target, made if need be, counted active
// until release. A Service without EndpointSlices is unknown: it gets no
// target, even one that was open (the Service went).
func (ts *targets) acquire(namespace, name string) (*entry, error) {
	if !ts.cluster.HasService(namespace, name) {
		return nil, errUnknownService
	}
	key := namespace + "/" + name
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		return nil, errStopping
	}
	e := ts.byKey[key]
	if e == nil {
		t, err := activator.NewTarget(key, ts.cfg.targetConfig(ts.metrics))
		if err != nil {
			return nil, err
		}
		ctx, stop := context.WithCancel(context.Background())
		e = &entry{key: key, target: t, stopFeed: stop, fed: make(chan struct{})}
		src := ts.cluster.Backends(namespace, name, ts.cfg.GatePort)
		go func() {
			defer close(e.fed)
			t.Run(ctx, src)
		}()
		ts.byKey[key] = e
		ts.own.targets.Set(float64(len(ts.byKey)))
		ts.cfg.Logger.Info("target opened", "target", key)
	}
	e.active++
	return e, nil
}

// release ends a request's hold on its target.
func (ts *targets) release(e *entry) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	e.active--
	if e.active == 0 {
		e.idleSince = ts.cfg.Clock.Now()
	}
}

// sweepEvery closes idle targets until ctx ends, looking every quarter of
// the idle timeout (10 ms at least): a target lives between 1 and 1.25
// idle timeouts after its last request.
func (ts *targets) sweepEvery(ctx context.Context) {
	tick := ts.cfg.Clock.NewTicker(max(ts.cfg.IdleTimeout/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
			ts.sweep()
		}
	}
}

// sweep closes the targets idle for the idle timeout. They leave the map
// under the lock that acquire takes, so no request holds one that closes.
func (ts *targets) sweep() {
	now := ts.cfg.Clock.Now()
	var idle []*entry
	ts.mu.Lock()
	for k, e := range ts.byKey {
		if e.active == 0 && now.Sub(e.idleSince) >= ts.cfg.IdleTimeout {
			idle = append(idle, e)
			delete(ts.byKey, k)
		}
	}
	ts.own.targets.Set(float64(len(ts.byKey)))
	ts.mu.Unlock()
	for _, e := range idle {
		ts.close(e, "idle")
	}
}

// closeAll closes every target (held requests get 503) and makes no new
// one.
func (ts *targets) closeAll() {
	ts.mu.Lock()
	ts.closed = true
	all := make([]*entry, 0, len(ts.byKey))
	for k, e := range ts.byKey {
		all = append(all, e)
		delete(ts.byKey, k)
	}
	ts.own.targets.Set(0)
	ts.mu.Unlock()
	for _, e := range all {
		ts.close(e, "stopping")
	}
}

func (ts *targets) close(e *entry, why string) {
	e.stopFeed()
	<-e.fed
	e.target.Close()
	ts.metrics.Closed(e.key)
	ts.cfg.Logger.Info("target closed", "target", e.key, "why", why)
}

// status is the Service's target's state, if it has one open.
func (ts *targets) status(namespace, name string) (activator.Status, bool) {
	ts.mu.Lock()
	e := ts.byKey[namespace+"/"+name]
	ts.mu.Unlock()
	if e == nil {
		return activator.Status{}, false
	}
	return e.target.Status(), true
}

func (ts *targets) count() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.byKey)
}

// ServeHTTP routes by Host: NAME.NAMESPACE.DOMAIN to Service NAME's target.
func (ts *targets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	namespace, name, ok := parseHost(r.Host, ts.cfg.Domain)
	if !ok {
		ts.own.unknown.WithLabelValues("host").Inc()
		http.Error(w, fmt.Sprintf("host %q is not NAME.NAMESPACE.%s: the activator routes by Host to Service NAME in namespace NAMESPACE", r.Host, ts.cfg.Domain), http.StatusNotFound)
		return
	}
	if contract.IsRouteCheck(r) {
		// Answered without a target: a check opens no health checks.
		if !ts.cluster.HasService(namespace, name) {
			ts.unknownService(w, namespace, name)
			return
		}
		contract.AnswerRouteCheck(w, r)
		return
	}
	e, err := ts.acquire(namespace, name)
	switch {
	case errors.Is(err, errUnknownService):
		ts.unknownService(w, namespace, name)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer ts.release(e)
	e.target.ServeHTTP(w, r)
}

func (ts *targets) unknownService(w http.ResponseWriter, namespace, name string) {
	ts.own.unknown.WithLabelValues("service").Inc()
	http.Error(w, fmt.Sprintf("no Service %q with endpoints in namespace %q: no EndpointSlice is labelled %s=%s", name, namespace, kubebackends.ServiceNameLabel, name), http.StatusNotFound)
}

// parseHost splits NAME.NAMESPACE.DOMAIN, ignoring case, a port and a
// trailing dot. NAME and NAMESPACE must be DNS labels, as Service and
// namespace names are.
func parseHost(host, domain string) (namespace, name string, ok bool) {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	rest, ok := strings.CutSuffix(host, "."+domain)
	if !ok {
		return "", "", false
	}
	name, namespace, ok = strings.Cut(rest, ".")
	if !ok || len(validation.IsDNS1123Label(name)) > 0 || len(validation.IsDNS1123Label(namespace)) > 0 {
		return "", "", false
	}
	return namespace, name, true
}

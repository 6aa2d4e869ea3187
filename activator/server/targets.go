package server

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

// targets holds one activator target per Service served. Without fixed
// routes, a target is made on the first request for its Service and
// closed once it has had no request, in flight or held, for the idle
// timeout: its pods' health checks stop with it, so the work the
// activator does follows the Services in use, not the Services that
// exist. Fixed routes' targets live as long as the server.
type targets struct {
	cfg     *Config
	feed    *kubebackends.Feed
	metrics *prommetrics.Metrics
	own     *ownMetrics
	// events records why a Service cannot be routed (nil: not at all).
	events *serviceEvents
	// fixed: Config.Routes are the only Services; byHost finds them.
	fixed  bool
	byHost map[string]*entry // NAME.NAMESPACE.DOMAIN, lower case

	mu     sync.Mutex
	byKey  map[string]*entry // NAMESPACE/NAME
	closed bool
	// feedCtx ends every feed once the server stops.
	feedCtx context.Context
}

// entry is a Service's target and what keeps it open.
type entry struct {
	key, namespace, name string
	service              string
	gatePort             int32
	target               *activator.Target
	// route is set for a fixed route: it is never closed for idleness,
	// and announced once it takes traffic.
	route *announced
	// stopFeed ends the feed from the informers; fed is closed once it has.
	stopFeed context.CancelFunc
	fed      chan struct{}
	// active counts the requests being served or held; idleSince is when
	// it last went to 0.
	active    int
	idleSince time.Time
}

func newTargets(cfg *Config, feed *kubebackends.Feed, m *prommetrics.Metrics, own *ownMetrics) (*targets, error) {
	ts := &targets{cfg: cfg, feed: feed, metrics: m, own: own, byKey: map[string]*entry{}, byHost: map[string]*entry{},
		fixed: len(cfg.Routes) > 0}
	for i := range cfg.Routes {
		r := &cfg.Routes[i]
		key := r.Namespace + "/" + r.Name
		t, err := activator.NewTarget(key, cfg.targetConfig(m, r))
		if err != nil {
			ts.closeAll()
			return nil, fmt.Errorf("route %s: %w", key, err)
		}
		e := &entry{key: key, namespace: r.Namespace, name: r.Name, service: r.Service, gatePort: r.GatePort, target: t,
			route: &announced{label: r.Label}, fed: make(chan struct{})}
		if e.service == "" {
			e.service = r.Name
		}
		if e.gatePort == 0 {
			e.gatePort = cfg.GatePort
		}
		ts.byKey[key] = e
		ts.byHost[ts.host(r.Namespace, r.Name)] = e
	}
	ts.own.targets.Set(float64(len(ts.byKey)))
	return ts, nil
}

// host is a Service's host: NAME.NAMESPACE.DOMAIN.
func (ts *targets) host(namespace, name string) string {
	return strings.ToLower(name + "." + namespace + "." + ts.cfg.Domain)
}

// startFeeds starts the fixed routes' feeds; they run until ctx ends.
func (ts *targets) startFeeds(ctx context.Context, onUpdate func(*entry)) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.feedCtx = ctx
	for _, e := range ts.byKey {
		ts.startFeed(ctx, e, onUpdate)
	}
}

// startFeed applies the informers' snapshots of e's Service to its target
// and tells onUpdate and Config.OnChange, until ctx ends.
func (ts *targets) startFeed(ctx context.Context, e *entry, onUpdate func(*entry)) {
	src := ts.feed.Backends(e.namespace, e.service, e.gatePort)
	var feeding sync.WaitGroup
	// Target.Run, with a look after each snapshot: an endpoint that turns
	// ready may not change the ready count (the gate's answer alone made
	// the pod usable), yet it is what an announcement waits for.
	feeding.Go(func() {
		for snap := range src.Snapshots(ctx) {
			e.target.Update(snap.Pods)
			// After the update: a request held meanwhile is answered
			// with the reason, not held until the timeout.
			e.target.SetUnroutable(snap.Unroutable)
			if snap.Unroutable != nil {
				ts.noRoute(e)
			}
			onUpdate(e)
		}
	})
	if e.route != nil || ts.cfg.OnChange != nil {
		feeding.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-e.target.Changed():
					onUpdate(e)
					if ts.cfg.OnChange != nil {
						ts.cfg.OnChange(e.namespace, e.name)
					}
				}
			}
		})
	}
	go func() {
		feeding.Wait()
		close(e.fed)
	}()
}

// acquire returns the Service's target, made if need be, counted active
// until release. Without fixed routes, a Service without EndpointSlices
// is unknown: it gets no target, even one that was open (the Service
// went).
func (ts *targets) acquire(namespace, name string) (*entry, error) {
	if !ts.fixed && !ts.feed.HasService(namespace, name) {
		return nil, errUnknownService
	}
	key := namespace + "/" + name
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		return nil, errStopping
	}
	e := ts.byKey[key]
	if e == nil && ts.fixed {
		return nil, errUnknownService
	}
	if e == nil {
		t, err := activator.NewTarget(key, ts.cfg.targetConfig(ts.metrics, nil))
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", key, err)
		}
		ctx, stop := context.WithCancel(ts.feedCtx)
		e = &entry{key: key, namespace: namespace, name: name, service: name, gatePort: ts.cfg.GatePort,
			target: t, stopFeed: stop, fed: make(chan struct{})}
		ts.startFeed(ctx, e, func(*entry) {})
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
		if e.route == nil && e.active == 0 && now.Sub(e.idleSince) >= ts.cfg.IdleTimeout {
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
// one. A fixed route stays known: its target answers 503.
func (ts *targets) closeAll() {
	ts.mu.Lock()
	if ts.closed {
		ts.mu.Unlock()
		return
	}
	ts.closed = true
	all := make([]*entry, 0, len(ts.byKey))
	for k, e := range ts.byKey {
		all = append(all, e)
		if e.route == nil {
			delete(ts.byKey, k)
		}
	}
	if !ts.fixed {
		ts.own.targets.Set(0)
	}
	ts.mu.Unlock()
	for _, e := range all {
		ts.close(e, "stopping")
	}
}

// close ends e's target. A fixed route's feed runs until the server's
// end: it is waited for then (waitFeeds).
func (ts *targets) close(e *entry, why string) {
	if e.stopFeed != nil {
		e.stopFeed()
		<-e.fed
	}
	e.target.Close()
	ts.metrics.Closed(e.key)
	ts.cfg.Logger.Info("target closed", "target", e.key, "why", why)
}

// waitFeeds waits for the fixed routes' feeds, once their context ended.
func (ts *targets) waitFeeds() {
	for _, e := range ts.byHost {
		if ts.feedCtx != nil {
			<-e.fed
		}
	}
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
	var e *entry
	if ts.fixed {
		// By the whole host: a fixed route's name may hold dots (a Pod's).
		if e = ts.byHost[normalizeHost(r.Host)]; e == nil {
			ts.unknownRoute(w, r)
			return
		}
	}
	namespace, name, ok := parseHost(r.Host, ts.cfg.Domain)
	if e != nil {
		namespace, name, ok = e.namespace, e.name, true
	}
	if !ok {
		ts.own.unknown.WithLabelValues("host").Inc()
		http.Error(w, fmt.Sprintf("host %q is not NAME.NAMESPACE.%s: the activator routes by Host to Service NAME in namespace NAMESPACE", r.Host, ts.cfg.Domain), http.StatusNotFound)
		return
	}
	if contract.IsRouteCheck(r) {
		// Answered without a target: a check opens no health checks.
		if e == nil && !ts.feed.HasService(namespace, name) {
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
	ts.noRoute(e)
	e.target.ServeHTTP(w, r)
}

// noRoute records an Event on e's Service if it cannot be routed
// (rate limited: serviceEvents).
func (ts *targets) noRoute(e *entry) {
	if ts.events == nil {
		return
	}
	if why := e.target.Unroutable(); why != nil && ts.events.noRoute(e.namespace, e.service, why) {
		ts.cfg.Logger.Info("recorded an Event on the Service", "target", e.key, "reason", ReasonNoRoute, "message", why.Reason)
	}
}

// handler serves one fixed route whatever the Host (a service port).
func (ts *targets) handler(namespace, name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e, err := ts.acquire(namespace, name)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer ts.release(e)
		e.target.ServeHTTP(w, r)
	})
}

func (ts *targets) unknownService(w http.ResponseWriter, namespace, name string) {
	ts.own.unknown.WithLabelValues("service").Inc()
	http.Error(w, fmt.Sprintf("no Service %q with endpoints in namespace %q: no EndpointSlice is labelled %s=%s", name, namespace, kubebackends.ServiceNameLabel, name), http.StatusNotFound)
}

// unknownRoute answers a host that names none of the fixed routes.
func (ts *targets) unknownRoute(w http.ResponseWriter, r *http.Request) {
	reason := "service"
	if _, _, ok := parseHost(r.Host, ts.cfg.Domain); !ok {
		reason = "host"
	}
	ts.own.unknown.WithLabelValues(reason).Inc()
	http.Error(w, fmt.Sprintf("no service for host %q (hosts are NAME.NAMESPACE.%s)", r.Host, ts.cfg.Domain), http.StatusNotFound)
}

// normalizeHost is host in lower case, without a port or a trailing dot.
func normalizeHost(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

// parseHost splits NAME.NAMESPACE.DOMAIN, ignoring case, a port and a
// trailing dot. NAME and NAMESPACE must be DNS labels, as Service and
// namespace names are.
func parseHost(host, domain string) (namespace, name string, ok bool) {
	rest, ok := strings.CutSuffix(normalizeHost(host), "."+domain)
	if !ok {
		return "", "", false
	}
	name, namespace, ok = strings.Cut(rest, ".")
	if !ok || len(validation.IsDNS1123Label(name)) > 0 || len(validation.IsDNS1123Label(namespace)) > 0 {
		return "", "", false
	}
	return namespace, name, true
}

package gate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/podgate/podgate/gate/autoscalerstats"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/gate/drain"
	"github.com/podgate/podgate/gate/gatemetrics"
	"github.com/podgate/podgate/gate/proxy"
	"github.com/podgate/podgate/gate/readiness"
	"github.com/podgate/podgate/internal/brokenbuild"
	"github.com/podgate/podgate/probe"
)

// Options configure a Gate. Only Config is required.
type Options struct {
	// Config is the gate's environment, decoded (contract.Decode).
	Config contract.Config
	// Clock times the drain, the preStop release, the request timeout and
	// the probe schedule; nil is the real clock.
	Clock clock.WithTickerAndDelayedExecution
	// Logger gets the gate's structured logs; nil discards them.
	Logger *slog.Logger
	// Status reports the pod's container statuses; nil means none
	// (delegated containers then never count as ready).
	Status StatusSource
	// Conditions writes the gate's condition on its pod
	// (contract.ContainersReadyCondition, see PodCondition); nil writes none.
	Conditions ConditionWriter
	// Runner runs probes; nil is probe.NewRunner().
	Runner *probe.Runner
	// RequestLog, if set, gets one line per request, shaped by
	// RequestLogTemplate (Knative's template language; "" or Knative's
	// default template: a JSON line). Health checks and probes are logged
	// only with LogProbeRequests, as Knative's
	// logging.enable-probe-request-log.
	RequestLog         io.Writer
	RequestLogTemplate string
	LogProbeRequests   bool
	// ShutdownTimeout bounds the wait for open connections once the gate
	// has drained (default DefaultShutdownTimeout).
	ShutdownTimeout time.Duration
	// HealthCheckHold bounds how long a health check is held while the
	// pod has not been ready yet and a readiness probe is aggressive
	// (periodSeconds: 0): 0 is queue-proxy's DefaultHealthCheckHold, a
	// negative value answers every health check at once.
	HealthCheckHold time.Duration
}

// DefaultHealthCheckHold is queue-proxy's limit for an aggressive
// readiness check: it probes for up to 10 s before answering not ready.
const DefaultHealthCheckHold = 10 * time.Second

// Gate is the sidecar. Create it with New and run it with Serve.
type Gate struct {
	cfg     contract.Config
	clock   clock.WithTickerAndDelayedExecution
	log     *slog.Logger
	runner  *probe.Runner
	target  probe.Target
	status  StatusSource
	agg     *readiness.Aggregator
	drainer *drain.Drainer
	proxy   *proxy.Proxy
	metrics *gatemetrics.Metrics
	stats   *autoscalerstats.Reporter
	reqlog  *proxy.RequestLog
	cond    *conditionPublisher // nil without Options.Conditions

	// terminating is closed once the pod is known to be deleted: SIGTERM
	// (Serve's context ending), the gate's own preStop hook, or the status
	// source's deletionTimestamp, whichever comes first.
	terminating chan struct{}
	// drainSaid is closed once the drain's end is logged: the preStop
	// hooks waiting for the drain are answered only then, so the
	// "drained:" line always comes before a container's SIGTERM.
	drainSaid     chan struct{}
	drainSaidOnce sync.Once
	termOnce      sync.Once
	// statusSeen: the status source has reported at least once.
	statusSeen atomic.Bool
	// reporting is the drain's progress reporter; quit ends it.
	reporting sync.WaitGroup
	quit      chan struct{}
	// stopping counts preStop hooks waiting without a SIGTERM: a container
	// is about to be stopped, so the pod is not ready meanwhile.
	stopping signalingCounter
	// preStops counts preStop hooks inside /wait-for-drain, SIGTERM or not.
	preStops atomic.Int32
	// admin is what the admin port's state-changing calls keep (admin.go).
	admin adminState

	shutdownTimeout time.Duration

	// readyChanged is closed and replaced whenever the answer to a health
	// check may have changed (a container's readiness, the drain, a
	// preStop hook): held health checks wait on it.
	readyMu      sync.Mutex
	readyChanged chan struct{}
	// holdChecks: some readiness probe is aggressive (periodSeconds: 0),
	// so health checks are held until the pod is first ready.
	holdChecks bool
	holdLimit  time.Duration
	everReady  atomic.Bool // every container was ready at some point
	held       atomic.Int64

	// holds are the requests held at the door while the containers are
	// not ready (hold.go).
	holds holdLog
	// podOut: the status source's last report says the pod is not Ready,
	// so it is out of the endpoints (or on its way out).
	podOut atomic.Bool
}

// signalingCounter is an atomic counter that signals every change.
type signalingCounter struct {
	n       atomic.Int32
	changed func()
}

func (c *signalingCounter) Add(delta int32) int32 {
	n := c.n.Add(delta)
	c.changed()
	return n
}

func (c *signalingCounter) Load() int32 { return c.n.Load() }

// New builds a Gate from its configuration. Nothing runs until Serve.
func New(opts Options) (*Gate, error) {
	cfg := opts.Config
	containers, err := readiness.Containers(cfg)
	if err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Runner == nil {
		opts.Runner = probe.NewRunner()
	}
	if cfg.UpstreamHost == "" {
		cfg.UpstreamHost = contract.Defaults().UpstreamHost
	}
	cfg = withTLSDefaults(cfg)
	opts.ShutdownTimeout = cmp.Or(max(opts.ShutdownTimeout, 0), DefaultShutdownTimeout)
	opts.HealthCheckHold = cmp.Or(opts.HealthCheckHold, DefaultHealthCheckHold)
	g := &Gate{
		shutdownTimeout: opts.ShutdownTimeout,
		readyChanged:    make(chan struct{}),
		holdLimit:       opts.HealthCheckHold,
		cfg:             cfg,
		clock:           opts.Clock,
		log:             opts.Logger,
		runner:          opts.Runner,
		target:          probe.Target{PodIP: cfg.UpstreamHost},
		status:          opts.Status,
		terminating:     make(chan struct{}),
		quit:            make(chan struct{}), drainSaid: make(chan struct{}),
	}
	g.stopping.changed = g.signalReadiness
	// The statistics run on the real clock: their rules are tested in
	// their package on a fake one, and a reporter waiting on the gate's
	// clock every second would be one more waiter on a test's fake clock.
	g.stats = autoscalerstats.NewReporter(clock.RealClock{}, cfg.Pod)
	for _, p := range cfg.ReadinessProbes {
		g.holdChecks = g.holdChecks || (p.PeriodSeconds <= 0 && opts.HealthCheckHold > 0)
	}
	g.drainer = drain.New(opts.Clock, cfg.DrainQuietPeriod)
	lim := proxy.NewLimiter(cfg.ContainerConcurrency)
	// Before the aggregator, which reports its first verdicts as it is built.
	src := gatemetrics.Sources{InFlight: g.drainer.InFlight, QueueDepth: lim.Depth, Ready: g.Ready, HealthHeld: g.held.Load}
	if lim != nil {
		src.BreakerInFlight = lim.Occupancy
	}
	g.metrics = gatemetrics.New(src, slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn))
	g.agg = readiness.New(containers, readiness.Options{
		Clock:              opts.Clock,
		Runner:             opts.Runner,
		Target:             g.target,
		UserPort:           cfg.UserPort,
		HTTP2AutoDetection: cfg.HTTP2AutoDetection,
		HaveStatusSource:   opts.Status != nil,
		Logger:             opts.Logger,
		OnContainerChange: func(c string, ready bool, _ string) {
			g.metrics.ContainerReady(c, ready)
			g.cond.kick() // the condition names each container not ready
		},
		OnChange: g.readinessChanged,
		OnAttempt: func(c string, out probe.Outcome) {
			g.metrics.ProbeResult(c, "readiness", out.Result)
			g.cond.kick() // the condition's message quotes the probe's
		},
		OnWatched: func(c string, out probe.Outcome) {
			g.metrics.ProbeResult(c, "liveness", out.Result)
		},
		Excluded: cfg.ExcludedContainers,
	})
	g.cond = newConditionPublisher(opts.Conditions, opts.Clock, opts.Logger, g.condition)
	g.signalReadiness() // the aggregator's first verdict
	if g.proxy, err = g.newProxy(lim); err != nil {
		return nil, err
	}
	if g.reqlog, err = newRequestLog(opts, cfg); err != nil {
		return nil, err
	}
	return g, nil
}

// newProxy is the data path to the serving container, behind the door
// (hold.go) and with the hand-off to Knative's activator when configured.
func (g *Gate) newProxy(lim *proxy.Limiter) (*proxy.Proxy, error) {
	cfg := g.cfg
	var handoff *url.URL
	if cfg.HandoffURL != "" {
		var err error
		if handoff, err = url.Parse(cfg.HandoffURL); err != nil {
			return nil, fmt.Errorf("%s: %w", contract.EnvHandoffURL, err)
		}
	}
	upstream := net.JoinHostPort(cfg.UpstreamHost, strconv.Itoa(cfg.UserPort))
	return proxy.New(proxy.Config{Upstream: upstream, Clock: g.clock, Limits: proxy.Limits{Request: cfg.RevisionTimeout, ResponseStart: cfg.ResponseStartTimeout, Idle: cfg.IdleTimeout}, Limiter: lim,
		Logger: g.log, Observer: g.metrics, Refused: g.refused, Back: g.agg.ServingBack, H2COnly: g.agg.ServingSpeaksH2C,
		Door: door{g}, Handoff: handoff}), nil
}

// newRequestLog is the request log Options ask for; nil for none.
func newRequestLog(opts Options, cfg contract.Config) (*proxy.RequestLog, error) {
	if opts.RequestLog == nil {
		return nil, nil
	}
	return proxy.NewRequestLog(opts.RequestLog, proxy.RequestLogOptions{
		Template: opts.RequestLogTemplate, DefaultTemplate: contract.DefaultRequestLogTemplate, Probes: opts.LogProbeRequests,
		Revision: proxy.RequestLogRevision{Name: cfg.Revision, Namespace: cfg.Namespace, Service: cfg.Service,
			Configuration: cfg.Configuration, PodName: cfg.Pod, PodIP: cfg.PodIP},
	})
}

// Ready is what the gate answers health checks with: not draining, no
// container's preStop running, the status source (if any) heard from, and
// every container ready. Until the status source's first report the gate
// cannot know whether the containers it does not probe itself run at all
// (as a native sidecar it starts before them).
func (g *Gate) Ready() bool {
	return !g.drainer.Draining() && !g.restarting() && g.agg.Ready() &&
		(g.status == nil || g.statusSeen.Load())
}

// restarting: a container's preStop hook runs without a SIGTERM to the
// gate (a liveness kill), so that container is about to go.
func (g *Gate) restarting() bool {
	return g.stopping.Load() > 0 && !brokenbuild.Has(brokenbuild.Readiness)
}

// Aggregator is the gate's view of its containers.
func (g *Gate) Aggregator() *readiness.Aggregator { return g.agg }

// Metrics serves /metrics.
func (g *Gate) Metrics() http.Handler { return g.metrics }

// Registry is the gate's Prometheus registry, which /metrics serves.
func (g *Gate) Registry() *prometheus.Registry { return g.metrics.Registry() }

// Drainer decides when the gate has drained.
func (g *Gate) Drainer() *drain.Drainer { return g.drainer }

// readinessChanged is the aggregate's change: held health checks look
// again.
func (g *Gate) readinessChanged(ready bool, reasons string) {
	g.signalReadiness()
	if ready {
		g.log.Info("all containers ready")
	} else {
		g.log.Info("not all containers ready", "notReady", reasons)
	}
}

// signalReadiness wakes every held health check to look at the state
// again. Every input of Ready calls it when it changes, so it is also where
// the gate notes that it has been ready once (which ends the holding of
// health checks).
func (g *Gate) signalReadiness() {
	if g.agg != nil && g.Ready() { // nil: New is still building it
		g.everReady.Store(true)
	}
	g.readyMu.Lock()
	close(g.readyChanged)
	g.readyChanged = make(chan struct{})
	g.readyMu.Unlock()
	g.cond.kick()
}

// readinessSignal is closed at the next signalReadiness. Take it before
// reading the state, so no change between the two is missed.
func (g *Gate) readinessSignal() <-chan struct{} {
	g.readyMu.Lock()
	defer g.readyMu.Unlock()
	return g.readyChanged
}

// HealthChecksHeld is how many health checks wait for the pod to be ready.
func (g *Gate) HealthChecksHeld() int { return int(g.held.Load()) }

// refused is the proxy's report of a refused connection: the serving
// container is down (restarting), so the pod is not ready from now on, and
// idle connections to the old process are useless.
func (g *Gate) refused(err error) {
	if g.agg.Suspect(g.agg.Serving(), "refused the proxy's connection: "+err.Error()) {
		g.proxy.CloseIdle()
	}
}

// ServeHTTP serves the traffic port: health checks on any path, and every
// other request proxied to the serving container.
func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &proxy.Recorder{ResponseWriter: w}
	switch classify(r) {
	case kindHealth:
		g.serveHealth(rec, r)
		g.logRequest(r, rec, start, true)
		return
	case kindNetworkProbe:
		serveNetworkProbe(rec, r, g.drainer.Draining())
		g.logRequest(r, rec, start, true)
		return
	}
	// The autoscaler's statistics count what queue-proxy counts: every
	// request past the health checks.
	proxied := autoscalerstats.Proxied(r)
	g.stats.In(start, proxied)
	g.drainer.Arrive()
	if g.drainer.Draining() {
		// A router that reaches the pod through a Service's ClusterIP
		// (Knative's ingress does) keeps its keep-alive connections
		// pinned to this pod by conntrack after the pod left the
		// endpoints, and every request restarts the quiet period: the
		// drain would last until the grace period's SIGKILL cut requests
		// short. Closing the connection after each answer (a GOAWAY on
		// HTTP/2) makes the router dial again, to a pod that is not
		// terminating.
		w.Header().Set("Connection", "close")
	}
	defer func() {
		g.drainer.Leave()
		end := time.Now()
		g.stats.Out(end, proxied)
		// Knative's invocation histogram leaves out probe-marked requests.
		g.metrics.Request(rec.Code(), end.Sub(start), r.Header.Get(contract.NetworkProbeHeader) == "")
		g.logRequest(r, rec, start, false)
	}()
	g.proxy.Serve(rec, r)
}

// AutoscalerStats is the Stat the autoscaler would scrape now.
func (g *Gate) AutoscalerStats() *autoscalerstats.Stat { return g.stats.Current() }

// logRequest logs r; probe: a health check or route check, which only
// a probe request log shows.
func (g *Gate) logRequest(r *http.Request, rec *proxy.Recorder, start time.Time, probe bool) {
	if g.reqlog != nil {
		g.reqlog.Log(r, rec.Code(), rec.Bytes(), time.Since(start), probe)
	}
}

// Listeners are the gate's sockets. Autoscaler may be nil: no statistics
// port (they are still computed).
type Listeners struct {
	Serving, Admin, Metrics, Autoscaler net.Listener

	// TLS serves traffic over TLS (QUEUE_SERVING_TLS_PORT); nil while the
	// serving certificate is not mounted (tls.go).
	TLS net.Listener
}

// Close closes every listener that is open.
func (l Listeners) Close() {
	for _, ln := range []net.Listener{l.Serving, l.Admin, l.Metrics, l.Autoscaler} {
		if ln != nil {
			_ = ln.Close()
		}
	}

	if l.TLS != nil {
		_ = l.TLS.Close()
	}
}

// Listen opens the gate's ports on host: the pod IP locally, where every
// pod has its own loopback address, or "" (every interface) on Kubernetes.
func Listen(host string, cfg contract.Config) (Listeners, error) {
	var ls Listeners
	for _, p := range []struct {
		env  string
		port int
		dst  *net.Listener
	}{
		{contract.EnvQueueServingPort, cfg.ServingPort, &ls.Serving},
		{contract.EnvAdminPort, cfg.AdminPort, &ls.Admin},
		{contract.EnvMetricsPort, cfg.MetricsPort, &ls.Metrics},
		{contract.EnvAutoscalerPort, cfg.AutoscalerPort, &ls.Autoscaler},
	} {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p.port)))
		if err != nil {
			ls.Close()
			return Listeners{}, fmt.Errorf("%s %d: %w", p.env, p.port, err)
		}
		*p.dst = ln
	}

	if err := listenTLS(host, cfg, &ls); err != nil {
		ls.Close()
		return Listeners{}, err
	}
	return ls, nil
}

// DefaultShutdownTimeout bounds the wait for open responses (the preStop
// hooks' answers) once the gate has drained.
const DefaultShutdownTimeout = 5 * time.Second

// Serve runs the gate on ls until ctx ends (SIGTERM), then drains: health
// checks fail at once, traffic is still served, and Serve returns once no
// request arrived for the quiet period and none is in flight. It closes
// the listeners.
func (g *Gate) Serve(ctx context.Context, ls Listeners) error {
	tlsSrv, tlsErr := g.tlsServer(ls.TLS)
	if tlsErr != nil {
		ls.Close()
		return tlsErr
	}
	stopBackground := g.startBackground()
	defer stopBackground()

	servers := g.servers(ls)
	if tlsSrv != nil {
		servers = append(servers, *tlsSrv)
	}
	served, waitServed := serveAll(servers)
	autoscaler := "none"
	if ls.Autoscaler != nil {
		autoscaler = ls.Autoscaler.Addr().String()
	}
	g.log.Info("listening", "serving", ls.Serving.Addr().String(), "admin", ls.Admin.Addr().String(),
		"metrics", ls.Metrics.Addr().String(), "autoscaler", autoscaler, "upstream", g.proxy.Upstream(), "serving container", g.agg.Serving())

	var failed error
	select {
	case <-ctx.Done():
		// The drain may have started (and ended) already: as a native
		// sidecar the gate learns of the deletion before its SIGTERM.
		g.terminate("SIGTERM")
		select {
		case <-g.drainer.Done():
		case failed = <-served:
		}
	case failed = <-served:
	}
	err := errors.Join(failed, g.shutdown(servers))
	waitServed()
	return err
}

// startBackground starts what runs behind the ports: the probes, the
// status source's watch and the condition's writes. The function it
// returns stops them, waits for them and ends the drain's reports.
func (g *Gate) startBackground() (stop func()) {
	bg, cancel := context.WithCancel(context.Background())
	waitProbes := g.agg.Start(bg)
	statusDone := g.watchStatus(bg)
	condDone := g.cond.start(bg)
	statsDone := make(chan struct{})
	go func() { defer close(statsDone); g.stats.Run(bg) }()
	return func() {
		cancel()
		waitProbes()
		<-statusDone
		<-condDone
		<-statsDone
		close(g.quit)
		g.reporting.Wait()
		g.drainer.Stop()
		g.proxy.CloseIdle()
	}
}

// server is one of the gate's HTTP servers on its listener.
type server struct {
	*http.Server
	ln net.Listener
	// traffic: the serving port, where a cut connection is a failed
	// request of the pod's.
	traffic bool
}

// servers are the gate's: traffic (HTTP/1.1 and h2c), admin, metrics
// and, with its listener, the autoscaler's statistics.
func (g *Gate) servers(ls Listeners) []server {
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	errLog := slog.NewLogLogger(g.log.Handler(), slog.LevelWarn)
	servers := []server{
		{&http.Server{Handler: g, Protocols: &protos, ReadHeaderTimeout: time.Minute, ErrorLog: errLog}, ls.Serving, true},
		{&http.Server{Handler: g.AdminHandler(), ReadHeaderTimeout: time.Minute, ErrorLog: errLog}, ls.Admin, false},
		{&http.Server{Handler: g.metrics, ReadHeaderTimeout: time.Minute, ErrorLog: errLog}, ls.Metrics, false},
	}
	if ls.Autoscaler != nil {
		servers = append(servers, server{&http.Server{Handler: g.stats.Handler(), ReadHeaderTimeout: time.Minute, ErrorLog: errLog}, ls.Autoscaler, false})
	}
	return servers
}

// serveAll serves every server on its listener; a server that fails sends
// its error on served. wait blocks until every one has returned.
func serveAll(servers []server) (served <-chan error, wait func()) {
	errs := make(chan error, len(servers))
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			serve := srv.Serve
			if srv.TLSConfig != nil { // the TLS port (tls.go)
				serve = func(ln net.Listener) error { return srv.ServeTLS(ln, "", "") }
			}
			if err := serve(srv.ln); !errors.Is(err, http.ErrServerClosed) {
				errs <- fmt.Errorf("serve on %s: %w", srv.ln.Addr(), err)
			}
		}()
	}
	return errs, wg.Wait
}

// shutdown stops every server, each given the shutdown timeout for its
// open responses (the preStop hooks' answers), and reports the requests
// in flight on the traffic port that it had to cut.
func (g *Gate) shutdown(servers []server) error {
	ctx, cancel := context.WithTimeout(context.Background(), g.shutdownTimeout)
	defer cancel()
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := srv.Shutdown(ctx)
			if err == nil {
				return
			}
			_ = srv.Close()
			// net/http counts a connection that has sent no request yet
			// as busy for its first 5 s, so a client's spare connection
			// holds Shutdown to its deadline. With no request in flight
			// on the traffic port nothing was cut; on the admin and
			// metrics ports nothing of the pod's traffic can be.
			if !srv.traffic || g.drainer.InFlight() == 0 {
				g.log.Info("closed connections still open after the drain; no request was in flight",
					"addr", srv.ln.Addr().String(), "waited", g.shutdownTimeout.String())
				return
			}
			mu.Lock()
			errs = append(errs, fmt.Errorf("shutdown on %s: %d request(s) still in flight were cut: %w",
				srv.ln.Addr(), g.drainer.InFlight(), err))
			mu.Unlock()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// PreStopsWaiting is how many preStop hooks are held in /wait-for-drain.
func (g *Gate) PreStopsWaiting() int { return int(g.preStops.Load()) }

// terminate starts the drain: the pod is being deleted (why says how the
// gate learnt it). Readiness fails from now on; traffic is still served.
func (g *Gate) terminate(why string) {
	g.termOnce.Do(func() {
		early := "no: other routers may send traffic"
		if g.cfg.OnlyRouter != "" {
			early = "yes, once the " + g.cfg.OnlyRouter + " confirms it no longer routes here"
		}
		g.log.Info("terminating: failing health checks, draining", "why", why,
			"quietPeriod", g.cfg.DrainQuietPeriod.String(), "inFlight", g.drainer.InFlight(), "endEarly", early)
		close(g.terminating)
		g.drainer.Drain()
		g.reporting.Add(1)
		// The reports' ticker starts here, with the drain: started in the
		// goroutine, it would start late on a busy machine.
		go g.reportDrain(g.clock.NewTicker(drainReportEvery))
		g.signalReadiness()
	})
}

// drainReportEvery is how often a drain in progress says what it waits for.
const drainReportEvery = 5 * time.Second

// reportDrain logs the drain's progress every few seconds and its end.
func (g *Gate) reportDrain(t clock.Ticker) {
	defer g.reporting.Done()
	defer t.Stop()
	for {
		select {
		case <-g.drainer.Done():
			g.logDrained()
			return
		case <-t.C():
			quiet, inFlight := g.drainer.Remaining()
			g.log.Info("draining", "quietLeft", quiet.Round(time.Second).String(), "inFlight", inFlight,
				"preStopHooksWaiting", g.preStops.Load())
		case <-g.quit:
			// Serve is returning; say how the drain ended if it did.
			select {
			case <-g.drainer.Done():
				g.logDrained()
			default:
			}
			return
		}
	}
}

func (g *Gate) logDrained() {
	defer g.drainSaidOnce.Do(func() { close(g.drainSaid) })
	if g.drainer.EndedEarly() {
		g.log.Info("drained: the "+g.cfg.OnlyRouter+", this pod's only router, no longer routes here and no request is in flight",
			"quietPeriod", g.cfg.DrainQuietPeriod.String())
		return
	}
	g.log.Info("drained: no request for the quiet period and none in flight", "quietPeriod", g.cfg.DrainQuietPeriod.String())
}

// Status source retry pause: doubling from the minimum to the maximum.
const (
	statusRetryMin = 100 * time.Millisecond
	statusRetryMax = 5 * time.Second
)

// statusReported notes the status source's report: the first one may make
// the gate ready.
func (g *Gate) statusReported() {
	if !g.statusSeen.Swap(true) {
		g.signalReadiness()
	}
	g.cond.kick() // a container's status message may have changed
}

// watchStatus feeds the status source's reports to the aggregator until
// ctx ends, watching again after a pause when the source fails.
func (g *Gate) watchStatus(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	if g.status == nil {
		close(done)
		return done
	}
	watch := func(ctx context.Context) error {
		return g.status.Watch(ctx, func(cs []readiness.ContainerStatus) {
			g.agg.SetStatuses(cs)
			g.statusReported()
		})
	}
	if pw, ok := g.status.(PodWatcher); ok {
		watch = func(ctx context.Context) error {
			return pw.WatchPod(ctx, func(ps PodStatus) {
				g.agg.SetStatuses(ps.Containers)
				if out := !ps.Ready; g.podOut.Swap(out) != out {
					g.signalReadiness() // held requests may be handed off now
				}
				g.statusReported()
				if ps.Terminating {
					g.terminate("the pod is being deleted (status source)")
				}
			})
		}
	}
	go func() {
		defer close(done)
		pause := statusRetryMin
		for {
			err := watch(ctx)
			if ctx.Err() != nil {
				return
			}
			g.log.Warn("status source failed; keeping the last container statuses", "error", err, "retryIn", pause.String())
			t := g.clock.NewTimer(pause)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
			pause = min(2*pause, statusRetryMax)
		}
	}()
	return done
}

package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/activator/kubebackends"
)

// The paths of the metrics port.
const (
	PathMetrics = "/metrics"
	PathHealthz = "/healthz"
	PathReadyz  = "/readyz"
)

// Server is an activator: its traffic listener, its service ports and its
// metrics port.
type Server struct {
	cfg     Config
	feed    *kubebackends.Feed
	targets *targets
	// tell, on a cluster where this activator is the only router, tells
	// the gates of pods no target follows (unrouted.go); nil otherwise.
	tell *gateTeller

	ln, metricsLn   net.Listener
	srv, metricsSrv *http.Server
	// traffic is every server of requests: srv on ln first, then one per
	// service port.
	traffic []listener
	ready   atomic.Bool
	// stopping: BeginShutdown ran.
	stopping atomic.Bool
	served   chan error

	// announceMu guards the routes' announced flags and curlsPrinted: a
	// ready line comes after the curl lines, once.
	announceMu   sync.Mutex
	curlsPrinted bool

	beginOnce, stopOnce sync.Once
	drained             chan error
	done                chan struct{}
	errMu               sync.Mutex
	err                 error
	stopInformers       context.CancelFunc
	informerCtx         context.Context
	informers, sweeps   sync.WaitGroup
}

type listener struct {
	ln  net.Listener
	srv *http.Server
}

// Run serves until ctx ends, then stops (see Start) and returns.
func Run(ctx context.Context, cfg Config) error {
	s, err := Start(ctx, cfg)
	if err != nil {
		return err
	}
	<-s.Done()
	return s.Err()
}

// Start is New and Serve, and a stop when ctx ends or a listener fails:
// not ready, no new connection, requests in flight and held get up to the
// shutdown timeout, then the held ones 503; Done is closed once
// everything stopped.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	s.Serve()
	go func() {
		select {
		case <-ctx.Done():
		case err := <-s.served:
			s.setErr(err)
		}
		_ = s.Shutdown(s.cfg.ShutdownTimeout)
	}()
	return s, nil
}

// New checks cfg, makes the informers and the fixed routes' targets, and
// listens on every address; nothing is served until Serve.
func New(cfg Config) (*Server, error) {
	if cfg.Client == nil && cfg.Rest == nil {
		return nil, errors.New("no API server configuration (Config.Client or Config.Rest)")
	}
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	if cfg.Client == nil {
		client, err := kubernetes.NewForConfig(cfg.Rest)
		if err != nil {
			return nil, fmt.Errorf("API client for %s: %w", cfg.Rest.Host, err)
		}
		cfg.Client = client
	}
	feed, err := kubebackends.NewFeed(cfg.Client, kubebackends.Options{Namespace: cfg.Namespace, OnlyRouter: cfg.OnlyRouter})
	if err != nil {
		return nil, err
	}
	reg, m, own, err := newMetrics()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, feed: feed, served: make(chan error, 1), drained: make(chan error, 1),
		done: make(chan struct{})}
	s.informerCtx, s.stopInformers = context.WithCancel(context.Background())
	if s.targets, err = newTargets(&s.cfg, feed, m, own); err != nil {
		return nil, err
	}
	if cfg.OnlyRouter && !s.targets.fixed {
		s.tell = newGateTeller(&s.cfg, feed)
	}
	if err := s.listen(); err != nil {
		s.targets.closeAll()
		s.closeListeners()
		return nil, err
	}
	if cfg.ServiceEvents {
		// After the last way New can fail: the broadcaster runs until
		// Shutdown.
		s.targets.events = newServiceEvents(cfg.Client, feed, s.cfg.Clock)
	}
	errorLog := slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn)
	s.srv = &http.Server{Handler: s.targets, ReadHeaderTimeout: 10 * time.Second, ErrorLog: errorLog}
	s.traffic[0].srv = s.srv
	for i, p := range cfg.ServicePorts {
		s.traffic[i+1].srv = &http.Server{Handler: s.targets.handler(p.Namespace, p.Name), ReadHeaderTimeout: 10 * time.Second, ErrorLog: errorLog}
	}
	if s.metricsLn != nil {
		mux := http.NewServeMux()
		mux.Handle(PathMetrics, promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: errorLog}))
		mux.HandleFunc(PathHealthz, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
		mux.HandleFunc(PathReadyz, s.readyz)
		s.metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: errorLog}
	}
	return s, nil
}

// listen opens the traffic address, each service port on its host, and
// the metrics address.
func (s *Server) listen() error {
	ln := s.cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.Listen); err != nil {
			return fmt.Errorf("listen: %w", err)
		}
	}
	s.ln = ln
	s.traffic = []listener{{ln: ln}}
	host, _, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	for _, p := range s.cfg.ServicePorts {
		pln, err := net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(p.Port)))
		if err != nil {
			return fmt.Errorf("--service-port %s: %w", p.Raw, err)
		}
		s.traffic = append(s.traffic, listener{ln: pln})
		s.targets.byKey[p.Namespace+"/"+p.Name].route.port = pln.Addr()
	}
	s.metricsLn = s.cfg.MetricsListener
	if s.metricsLn == nil && s.cfg.MetricsListen != "" {
		if s.metricsLn, err = net.Listen("tcp", s.cfg.MetricsListen); err != nil {
			return fmt.Errorf("metrics listen: %w", err)
		}
	}
	return nil
}

// Serve runs the informers and serves the metrics port at once. Traffic
// is served at once with fixed routes (a request is held until its
// target has a pod), else once the informers have listed every
// EndpointSlice and Pod: before, every host would be unknown. It is
// ready from that listing on.
func (s *Server) Serve() {
	s.informers.Go(func() { s.feed.Run(s.informerCtx) })
	if s.tell != nil {
		s.informers.Go(func() { s.tell.run(s.informerCtx) })
	}
	s.targets.startFeeds(s.informerCtx, s.announceReady)
	if !s.targets.fixed {
		s.sweeps.Go(func() { s.targets.sweepEvery(s.informerCtx) })
	}
	if s.metricsSrv != nil {
		go func() { _ = s.serve(s.metricsSrv, s.metricsLn, "serve metrics") }()
	}
	if s.targets.fixed {
		s.serveTraffic()
	}
	s.sweeps.Go(func() {
		if !s.feed.WaitForSync(s.informerCtx) {
			return
		}
		if !s.targets.fixed {
			s.serveTraffic()
		}
		if !s.stopping.Load() {
			s.ready.Store(true)
			s.cfg.Logger.Info("activator ready: EndpointSlices and Pods listed")
		}
	})
	s.cfg.Logger.Info("activator starting", "listen", s.ln.Addr().String(), "metrics", addrString(s.metricsLn),
		"domain", s.cfg.Domain, "namespace", s.cfg.Namespace, "routes", len(s.cfg.Routes))
}

func (s *Server) serveTraffic() {
	for _, l := range s.traffic {
		go func() { _ = s.serve(l.srv, l.ln, "serve") }()
	}
}

// serve is srv.Serve(ln) with a clean stop reported as nil, and a failure
// on Served.
func (s *Server) serve(srv *http.Server, ln net.Listener, what string) error {
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	err = fmt.Errorf("%s %s: %w", what, ln.Addr(), err)
	select {
	case s.served <- err:
	default:
	}
	return err
}

// BeginShutdown makes the server not ready and stops taking connections;
// requests in flight go on. With releaseHeld, held requests get 503 at
// once and no target takes a new one: `podgate run` stops the pods they
// would wait for.
func (s *Server) BeginShutdown(releaseHeld bool) {
	if releaseHeld {
		s.targets.closeAll()
	}
	s.beginOnce.Do(func() {
		s.stopping.Store(true)
		s.ready.Store(false)
		go func() {
			errs := make(chan error, len(s.traffic))
			for _, l := range s.traffic {
				// No deadline: Shutdown bounds the wait.
				go func() { errs <- l.srv.Shutdown(context.Background()) }()
			}
			var first error
			for range s.traffic {
				if err := <-errs; err != nil && first == nil {
					first = err
				}
			}
			s.drained <- first
		}()
	})
}

// Shutdown stops the server: BeginShutdown, then up to timeout for the
// requests in flight and held; past it, the held ones get 503 with a
// second to send it, and what still runs is cut. Then the targets, the
// informers and the metrics port stop, and Done is closed. Later calls
// return the first one's result.
func (s *Server) Shutdown(timeout time.Duration) error {
	s.BeginShutdown(false)
	s.stopOnce.Do(func() {
		var err error
		select {
		case err = <-s.drained:
		case <-time.After(timeout):
			s.cfg.Logger.Warn("requests still running after the shutdown timeout: held ones get 503, the others are cut", "timeout", timeout)
			s.targets.closeAll()
			select {
			case err = <-s.drained:
			case <-time.After(time.Second):
				for _, l := range s.traffic {
					_ = l.srv.Close()
				}
				<-s.drained
			}
		}
		// Shutdown closes only a listener that Serve took.
		s.closeListeners()
		s.targets.closeAll()
		if s.tell != nil {
			s.tell.stop()
		}
		s.stopInformers()
		s.informers.Wait()
		s.sweeps.Wait()
		s.targets.waitFeeds()
		if s.targets.events != nil {
			s.targets.events.stop()
		}
		if s.metricsSrv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			if e := s.metricsSrv.Shutdown(ctx); e != nil {
				_ = s.metricsSrv.Close()
			}
			cancel()
		}
		if err != nil {
			s.setErr(fmt.Errorf("shutdown: %w", err))
		}
		s.cfg.Logger.Info("activator stopped")
		close(s.done)
	})
	<-s.done
	return s.Err()
}

func (s *Server) closeListeners() {
	for _, l := range s.traffic {
		_ = l.ln.Close()
	}
	if s.metricsLn != nil {
		_ = s.metricsLn.Close()
	}
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	switch {
	case s.ready.Load():
		_, _ = io.WriteString(w, "ok")
	case s.stopping.Load():
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
	default:
		http.Error(w, "EndpointSlices and Pods not listed yet", http.StatusServiceUnavailable)
	}
}

func (s *Server) setErr(err error) {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

func addrString(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}

// Addr is the traffic address; MetricsAddr serves /metrics, /healthz and
// /readyz (nil without Config.MetricsListen).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }
func (s *Server) MetricsAddr() net.Addr {
	if s.metricsLn == nil {
		return nil
	}
	return s.metricsLn.Addr()
}

// Ready says whether traffic is served and the informers have listed.
func (s *Server) Ready() bool { return s.ready.Load() }

// Served reports a listener that stopped serving with an error.
func (s *Server) Served() <-chan error { return s.served }

// Done is closed once the activator has stopped.
func (s *Server) Done() <-chan struct{} { return s.done }

// Err is why the activator stopped other than its context's end.
func (s *Server) Err() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

// Status is the target of Service name in namespace, if one is open.
func (s *Server) Status(namespace, name string) (activator.Status, bool) {
	return s.targets.status(namespace, name)
}

// ServingPods is the pods of a route the activator sends requests to, so
// that a Service's status follows traffic (controllers.ServingCounter).
func (s *Server) ServingPods(namespace, name string) (int, bool) {
	st, ok := s.targets.status(namespace, name)
	return st.Ready, ok
}

// Targets is the number of Service targets open.
func (s *Server) Targets() int { return s.targets.count() }

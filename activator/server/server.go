package kubeactivator

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

// Server is a running activator.
type Server struct {
	cfg     Config
	cluster *kubebackends.Feed
	targets *targets

	ln, metricsLn     net.Listener
	srv, metricsSrv   *http.Server
	ready, stopping   atomic.Bool
	done              chan struct{}
	errMu             sync.Mutex
	err               error
	stopInformers     context.CancelFunc
	informers, sweeps sync.WaitGroup
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

// Start checks cfg, listens on both addresses and serves the metrics port
// at once. Traffic is served once the informers have listed every
// EndpointSlice and Pod (ready from then on): before, every host would be
// unknown. When ctx ends the activator stops: not ready, no new
// connection, requests in flight and held get up to the shutdown timeout,
// then the held ones 503; Done is closed once everything stopped.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Rest == nil {
		return nil, errors.New("no API server configuration")
	}
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	client, err := kubernetes.NewForConfig(cfg.Rest)
	if err != nil {
		return nil, fmt.Errorf("API client for %s: %w", cfg.Rest.Host, err)
	}
	cluster, err := kubebackends.NewFeed(client, kubebackends.Options{Namespace: cfg.Namespace})
	if err != nil {
		return nil, err
	}
	reg, m, own, err := newMetrics()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, cluster: cluster, done: make(chan struct{})}
	s.targets = newTargets(&s.cfg, cluster, m, own)
	if s.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	if s.metricsLn, err = net.Listen("tcp", cfg.MetricsListen); err != nil {
		s.ln.Close()
		return nil, fmt.Errorf("metrics listen: %w", err)
	}
	errorLog := slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn)
	mux := http.NewServeMux()
	mux.Handle(PathMetrics, promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: errorLog}))
	mux.HandleFunc(PathHealthz, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc(PathReadyz, s.readyz)
	s.metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: errorLog}
	s.srv = &http.Server{Handler: s.targets, ReadHeaderTimeout: 10 * time.Second, ErrorLog: errorLog}

	informerCtx, stop := context.WithCancel(context.Background())
	s.stopInformers = stop
	s.informers.Go(func() { cluster.Run(informerCtx) })
	s.sweeps.Go(func() { s.targets.sweepEvery(informerCtx) })
	metricsServed := make(chan error, 1)
	go func() { metricsServed <- serve(s.metricsSrv, s.metricsLn) }()
	go s.run(ctx, metricsServed)
	cfg.Logger.Info("activator starting", "listen", s.ln.Addr().String(), "metrics", s.metricsLn.Addr().String(),
		"domain", cfg.Domain, "namespace", cfg.Namespace, "api", cfg.Rest.Host)
	return s, nil
}

// run waits for the informers, serves traffic until ctx ends, and stops.
func (s *Server) run(ctx context.Context, metricsServed <-chan error) {
	defer close(s.done)
	served := make(chan error, 1)
	if s.cluster.WaitForSync(ctx) {
		go func() { served <- serve(s.srv, s.ln) }()
		s.ready.Store(true)
		s.cfg.Logger.Info("activator ready: EndpointSlices and Pods listed")
		select {
		case <-ctx.Done():
		case err := <-served:
			s.setErr(fmt.Errorf("serve: %w", err))
		case err := <-metricsServed:
			s.setErr(fmt.Errorf("serve metrics: %w", err))
		}
	} else {
		s.ln.Close()
	}
	s.stop()
}

// stop is the end of run: traffic first, then the targets, informers and
// metrics.
func (s *Server) stop() {
	s.ready.Store(false)
	s.stopping.Store(true)
	if err := shutdown(s.srv, s.cfg.ShutdownTimeout); err != nil {
		// Past the timeout: the held requests get 503, with a moment to
		// send it; what still runs then is cut.
		s.cfg.Logger.Warn("requests still running after the shutdown timeout: held ones get 503, the others are cut", "timeout", s.cfg.ShutdownTimeout)
		s.targets.closeAll()
		if err := shutdown(s.srv, time.Second); err != nil {
			_ = s.srv.Close()
		}
	}
	s.targets.closeAll()
	s.stopInformers()
	s.informers.Wait()
	s.sweeps.Wait()
	if err := shutdown(s.metricsSrv, time.Second); err != nil {
		_ = s.metricsSrv.Close()
	}
	s.cfg.Logger.Info("activator stopped")
}

// shutdown is srv.Shutdown bounded by timeout.
func shutdown(srv *http.Server, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return srv.Shutdown(ctx)
}

// serve is srv.Serve(ln) with a clean stop reported as nil.
func serve(srv *http.Server, ln net.Listener) error {
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
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

// Addr is the traffic address; MetricsAddr serves /metrics, /healthz and
// /readyz.
func (s *Server) Addr() net.Addr        { return s.ln.Addr() }
func (s *Server) MetricsAddr() net.Addr { return s.metricsLn.Addr() }

// Ready says whether traffic is served.
func (s *Server) Ready() bool { return s.ready.Load() }

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

// Targets is the number of Service targets open.
func (s *Server) Targets() int { return s.targets.count() }

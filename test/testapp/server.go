package testapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// Server is a running test app. Its state can be read and flipped in process
// as well as over HTTP, so other packages' tests can drive it directly.
type Server struct {
	cfg   Config
	log   *slog.Logger
	clock clock.WithDelayedExecution

	// The probe endpoints read these lock-free: they are the hot path when a
	// benchmark probes at thousands per second.
	readyToggle       atomic.Bool
	liveToggle        atomic.Bool
	readyAfterElapsed atomic.Bool
	liveExpired       atomic.Bool
	// traffic counts the requests answered on / and any other path that
	// is not one of the app's endpoints (see Traffic).
	traffic atomic.Int64

	// mu orders state changes so that the gRPC status and the exec file end
	// up matching the last change, not whichever goroutine wrote last.
	mu sync.Mutex
	// execFile is the exec file this app wrote last (nil: none, or removed).
	execFile os.FileInfo

	// timers are set once in Start and only stopped afterwards. They are not
	// guarded by mu: a fake clock runs their callbacks (which take mu) while
	// holding its own lock, so stopping them under mu could deadlock.
	timers []clock.Timer

	httpLis net.Listener
	httpSrv *http.Server
	grpc    *grpcHealth // nil without GRPCAddr

	errc         chan error
	wg           sync.WaitGroup
	shutdownOnce sync.Once
	shutdownErr  error
}

// Start validates cfg, creates the exec file, binds the listeners and serves
// in the background until Shutdown. logger may be nil (no logs).
func Start(cfg Config, logger *slog.Logger) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:   cfg,
		log:   logger.With("name", cfg.Name),
		clock: cfg.Clock,
		errc:  make(chan error, 2),
	}
	s.readyToggle.Store(true)
	s.liveToggle.Store(true)
	s.readyAfterElapsed.Store(cfg.ReadyAfter == 0)

	// A restarted container starts healthy: recreate the file even if the
	// previous run toggled it away.
	if cfg.ExecFile != "" {
		fi, err := createExecFile(cfg.ExecFile)
		if err != nil {
			return nil, err
		}
		s.execFile = fi
	}
	if err := s.listen(); err != nil {
		return nil, err
	}
	s.publish()
	s.startTimers()
	s.serve()
	s.log.Info("listening", "addr", s.Addr(), "grpcAddr", s.GRPCAddr(), "execFile", cfg.ExecFile,
		"readyAfter", cfg.ReadyAfter, "failLiveAfter", cfg.FailLiveAfter, "sleepOnTerm", cfg.SleepOnTerm)
	return s, nil
}

// listen binds the HTTP listener and, with GRPCAddr, the gRPC one.
func (s *Server) listen() error {
	lis, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("testapp: listen for HTTP: %w", err)
	}
	s.httpLis = lis
	s.httpSrv = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	if s.cfg.GRPCAddr != "" {
		g, err := listenGRPC(s.cfg.GRPCAddr)
		if err != nil {
			_ = lis.Close()
			return err
		}
		s.grpc = g
	}
	return nil
}

// startTimers arms ReadyAfter and FailLiveAfter on the app's clock.
func (s *Server) startTimers() {
	if d := s.cfg.ReadyAfter; d > 0 {
		s.timers = append(s.timers, s.clock.AfterFunc(d, func() {
			s.readyAfterElapsed.Store(true)
			s.publish()
			s.log.Info("ready-after elapsed", "readyAfter", d, "ready", s.Ready())
		}))
	}
	if d := s.cfg.FailLiveAfter; d > 0 {
		s.timers = append(s.timers, s.clock.AfterFunc(d, func() {
			s.liveExpired.Store(true)
			s.publish()
			s.log.Info("fail-live-after elapsed: /healthz fails from now on", "failLiveAfter", d)
		}))
	}
}

// serve runs the HTTP and gRPC servers in the background; a listener that
// fails reports on Err.
func (s *Server) serve() {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.httpSrv.Serve(s.httpLis); !errors.Is(err, http.ErrServerClosed) {
			s.errc <- fmt.Errorf("testapp: serve HTTP on %s: %w", s.httpLis.Addr(), err)
		}
	}()
	if s.grpc != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.grpc.serve(); err != nil {
				s.errc <- err
			}
		}()
	}
}

// Addr is the bound HTTP address (host:port), with the real port when the
// configured one was 0.
func (s *Server) Addr() string { return s.httpLis.Addr().String() }

// URL is the base URL of the HTTP server, e.g. "http://127.0.0.1:41234".
func (s *Server) URL() string { return "http://" + s.Addr() }

// GRPCAddr is the bound gRPC health address, or "" when gRPC is off.
func (s *Server) GRPCAddr() string {
	if s.grpc == nil {
		return ""
	}
	return s.grpc.addr()
}

// Err reports a listener that failed while serving; Run watches it.
func (s *Server) Err() <-chan error { return s.errc }

// Ready is what /readyz answers: ready-after elapsed and the ready toggle on.
func (s *Server) Ready() bool { return s.readyAfterElapsed.Load() && s.readyToggle.Load() }

// Healthy is what /healthz answers: the live toggle on and fail-live-after
// not yet reached.
func (s *Server) Healthy() bool { return s.liveToggle.Load() && !s.liveExpired.Load() }

// Live is the live toggle, which /livez answers.
func (s *Server) Live() bool { return s.liveToggle.Load() }

// Traffic is how many traffic requests (any path but the app's own
// endpoints) the app has received: tests count what reached the serving
// container.
func (s *Server) Traffic() int64 { return s.traffic.Load() }

// SetReady sets the ready toggle, as /toggleReady?set= does.
func (s *Server) SetReady(ready bool) { s.store(&s.readyToggle, ready) }

// SetLive sets the live toggle, as /toggleLive?set= does.
func (s *Server) SetLive(live bool) { s.store(&s.liveToggle, live) }

func (s *Server) store(t *atomic.Bool, v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Store(v)
	s.publishLocked()
}

// flip inverts a toggle and returns its new value, atomically with respect
// to other changes.
func (s *Server) flip(t *atomic.Bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := !t.Load()
	t.Store(v)
	s.publishLocked()
	return v
}

// publish pushes the current probe state to the gRPC health server.
func (s *Server) publish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publishLocked()
}

func (s *Server) publishLocked() {
	if s.grpc != nil {
		s.grpc.set(s.Ready(), s.Healthy())
	}
}

// Shutdown stops serving: it closes the listeners, lets in-flight requests
// finish until ctx ends, then cuts the rest. It is idempotent and returns
// the first call's result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() {
		for _, t := range s.timers {
			t.Stop()
		}
		var errs []error
		if err := s.httpSrv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("testapp: shut down HTTP: %w", err))
			_ = s.httpSrv.Close()
		}
		if s.grpc != nil {
			s.grpc.stop(ctx)
		}
		s.wg.Wait()
		s.shutdownErr = errors.Join(errs...)
	})
	return s.shutdownErr
}

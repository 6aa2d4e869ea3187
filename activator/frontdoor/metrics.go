package frontdoor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/podgate/podgate/activator/prommetrics"
)

// MetricsServer serves the front door's Prometheus metrics (podgate run
// --metrics-listen): the activator's podgate_activator_* series, one
// target label per workload, plus the Go runtime's and the process's.
type MetricsServer struct {
	ln     net.Listener
	srv    *http.Server
	served chan error
}

// NewMetrics registers the collectors and listens on addr (checked with the
// flags: loopback, HOST:PORT). It does not serve until start.
func NewMetrics(addr string, logger *slog.Logger) (*MetricsServer, *prommetrics.Metrics, error) {
	reg := prometheus.NewRegistry()
	m, err := prommetrics.New(reg)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return nil, nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics-listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}))
	return &MetricsServer{
		ln:     ln,
		srv:    &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		served: make(chan error, 1),
	}, m, nil
}

func (s *MetricsServer) Start() {
	go func() {
		err := s.srv.Serve(s.ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.served <- err
	}()
}

// Close is for a server that never started.
// Addr is where the metrics are served.
func (s *MetricsServer) Addr() net.Addr { return s.ln.Addr() }

func (s *MetricsServer) Close() error { return s.ln.Close() }

// stop ends a started server: a scrape takes milliseconds, so a short
// bound is enough.
func (s *MetricsServer) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if e := <-s.served; err == nil {
		err = e
	}
	return err
}

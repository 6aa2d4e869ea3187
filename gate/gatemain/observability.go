package gatemain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/podgate/podgate/gate/contract"
)

// serveProfiles serves Go's profiles on the profiling port, as Knative's
// queue-proxy does when config-observability's profiling is enabled, on
// the gate's host; stop closes it.
func (c Config) serveProfiles(host string) (stop func(), err error) {
	port := contract.ProfilingPort
	if v := c.getenv(contract.EnvProfilingPort); v != "" {
		if port, err = strconv.Atoi(v); err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("%s: %q is not a port number", contract.EnvProfilingPort, v)
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("profiling port (OBSERVABILITY_CONFIG runtime.profiling is enabled): %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			c.Logger.Warn("profiling server stopped", "err", err)
		}
	}()
	c.Logger.Info("profiling enabled", "listen", ln.Addr().String(), "path", "/debug/pprof/")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}

// warnUnexported says once, at start, which of the exporters
// OBSERVABILITY_CONFIG asks for the gate does not run: it serves its
// metrics for Prometheus to pull (its metrics port) and passes trace
// headers through unchanged, but pushes neither metrics nor spans.
func warnUnexported(log *slog.Logger, obs contract.Observability) {
	for _, e := range []struct {
		field string
		exp   contract.Exporter
	}{{"tracing", obs.Tracing}, {"metrics", obs.Metrics}, {"requestMetrics", obs.RequestMetrics}} {
		switch e.exp.Protocol {
		case "", contract.ProtocolNone, contract.ProtocolPrometheus:
			continue
		}
		log.Warn("OBSERVABILITY_CONFIG asks for an exporter the gate does not run; metrics are served for Prometheus on the metrics port, trace headers pass through unchanged",
			"field", e.field+".protocol", "protocol", e.exp.Protocol, "endpoint", e.exp.Endpoint)
	}
}

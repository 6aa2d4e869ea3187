package server

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/podgate/podgate/activator/prommetrics"
)

// ownMetrics are the cluster activator's series besides every target's
// (activator/prommetrics).
type ownMetrics struct {
	targets prometheus.Gauge
	unknown *prometheus.CounterVec
}

// newMetrics registers, on a registry of its own: the targets' series,
// the activator's own, and the Go runtime's and the process's.
//
//	podgate_activator_targets                        Service targets open
//	podgate_activator_unknown_requests_total{reason} requests answered 404: reason "host" (not NAME.NAMESPACE.DOMAIN) or "service" (no EndpointSlice)
//
// The unknown requests carry no target label: their names come from
// clients, and a label per name would grow without bound.
func newMetrics() (*prometheus.Registry, *prommetrics.Metrics, *ownMetrics, error) {
	reg := prometheus.NewRegistry()
	m, err := prommetrics.New(reg)
	if err != nil {
		return nil, nil, nil, err
	}
	own := &ownMetrics{
		targets: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "podgate", Subsystem: "activator", Name: "targets",
			Help: "Service targets open: those with a request within the idle timeout.",
		}),
		unknown: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "podgate", Subsystem: "activator", Name: "unknown_requests_total",
			Help: "Requests answered 404: a host that is not NAME.NAMESPACE.DOMAIN (reason host), or names a Service without EndpointSlices (reason service).",
		}, []string{"reason"}),
	}
	for _, c := range []prometheus.Collector{
		own.targets, own.unknown,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return nil, nil, nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	// Both reasons from the start, at 0: a rate over a series that
	// appears only with its first request misses that request.
	own.unknown.WithLabelValues("host")
	own.unknown.WithLabelValues("service")
	return reg, m, own, nil
}

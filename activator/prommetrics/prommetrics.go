// Package prommetrics exports an activator's measurements to Prometheus.
package prommetrics

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podgate/podgate/activator"
)

// Metrics implements activator.Metrics with Prometheus collectors, one
// label "target" (namespace/name) on each.
type Metrics struct {
	requests *prometheus.CounterVec
	queue    *prometheus.GaugeVec
	ready    *prometheus.GaugeVec
	pods     *prometheus.GaugeVec
}

var _ activator.Metrics = (*Metrics)(nil)

// New registers the activator's collectors with reg:
//
//	podgate_activator_requests_total{target,code}  requests by status code (499: client left)
//	podgate_activator_queue_depth{target}          requests held for a backend
//	podgate_activator_backends_ready{target}       backends that may take traffic
//	podgate_activator_backends{target}             pods known for the target
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "podgate", Subsystem: "activator", Name: "requests_total",
			Help: "Requests answered by the activator, by status code (499: the client left first).",
		}, []string{"target", "code"}),
		queue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "podgate", Subsystem: "activator", Name: "queue_depth",
			Help: "Requests held because no backend had a free slot.",
		}, []string{"target"}),
		ready: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "podgate", Subsystem: "activator", Name: "backends_ready",
			Help: "Backends whose endpoint and gate both say ready.",
		}, []string{"target"}),
		pods: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "podgate", Subsystem: "activator", Name: "backends",
			Help: "Pods the target knows, ready or not.",
		}, []string{"target"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.queue, m.ready, m.pods} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register activator metrics: %w", err)
		}
	}
	return m, nil
}

// Request counts a finished request.
func (m *Metrics) Request(target string, code int) {
	m.requests.WithLabelValues(target, strconv.Itoa(code)).Inc()
}

// QueueDepth sets the number of held requests.
func (m *Metrics) QueueDepth(target string, depth int) {
	m.queue.WithLabelValues(target).Set(float64(depth))
}

// Backends sets the ready and known backends.
func (m *Metrics) Backends(target string, ready, total int) {
	m.ready.WithLabelValues(target).Set(float64(ready))
	m.pods.WithLabelValues(target).Set(float64(total))
}

// Forget drops a removed target's series.
func (m *Metrics) Forget(target string) {
	m.requests.DeletePartialMatch(prometheus.Labels{"target": target})
	m.queue.DeleteLabelValues(target)
	m.ready.DeleteLabelValues(target)
	m.pods.DeleteLabelValues(target)
}

// Closed drops the gauges of a target that closed (the activator on a
// cluster closes a Service's target when it is idle): a closed target
// holds no request and knows no pod. Its request counts stay, as
// counters must not go back while the process lives.
func (m *Metrics) Closed(target string) {
	m.queue.DeleteLabelValues(target)
	m.ready.DeleteLabelValues(target)
	m.pods.DeleteLabelValues(target)
}

package gatemetrics

import (
	"log"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/podgate/podgate/probe"
)

// Metrics are the gate's Prometheus metrics, on a registry of the gate's
// own (several gates may share a process, as in tests or `podgate run`):
//
//	podgate_requests_total{code}                          proxied requests by status (health checks excluded; 499: client left)
//	podgate_request_duration_seconds                      histogram, arrival to end of response
//	podgate_requests_in_flight                            arrived, not yet answered
//	podgate_queue_depth                                   waiting for a CONTAINER_CONCURRENCY slot
//	podgate_ridethrough_holds_total                       requests held because the container refused
//	podgate_ridethrough_retries_total                     connection attempts repeated for held requests
//	podgate_ridethrough_held                              requests held right now
//	podgate_readiness_holds_total                         requests held at the door because not every container was ready
//	podgate_readiness_held                                requests held at the door right now
//	podgate_handoffs_total                                held requests handed to Knative's activator (PODGATE_HANDOFF_URL)
//	podgate_upstream_errors_total                         failed after reaching the container (502, not replayed)
//	podgate_ready                                         1 when health checks are answered ready
//	podgate_health_checks_held                            health checks held until the pod is first ready
//	podgate_container_ready{container}                    1 when the container counts as ready
//	podgate_probe_results_total{container,kind,result}    probe attempts run by the gate
//
// plus the Go runtime's (go_*) and the process's (process_*) collectors,
// and queue-proxy's own two under the names Knative v0.50.0's queue-proxy
// exports them with request-metrics-protocol: prometheus (OpenTelemetry's
// Prometheus exporter: dots to underscores, the unit as a suffix, the
// instrumentation scope as otel_scope_* labels):
//
//	kn_serving_invocation_duration_seconds{http_response_status_code}  histogram, Knative's buckets; requests with a probe header excluded
//	kn_serving_queue_depth                                             with CONTAINER_CONCURRENCY > 0: requests waiting for or holding a slot
//
// The request path costs one atomic load, a counter increment and a
// histogram observation: a status code's counter is resolved from the
// vector once, on its first request, and kept in an array indexed by code.
// Codes are not resolved ahead of time because a resolved child is
// exported, and a page of zero series for codes never answered says
// nothing.
type Metrics struct {
	reg     *prometheus.Registry
	handler http.Handler

	requests *prometheus.CounterVec
	codes    [600]atomic.Pointer[codeRef]
	knVec    *prometheus.HistogramVec
	latency  prometheus.Histogram
	holds    prometheus.Counter
	retries  prometheus.Counter
	held     prometheus.Gauge
	upstream prometheus.Counter
	// The door (requests held while not every container is ready).
	rholds   prometheus.Counter
	rheld    prometheus.Gauge
	handoffs prometheus.Counter

	containers *prometheus.GaugeVec
	probeVec   *prometheus.CounterVec
	probesMu   sync.Mutex
	probes     map[probeKey]prometheus.Counter // resolved children of probeVec
}

// codeRef is a status code's resolved children: podgate's counter and
// Knative's histogram.
type codeRef struct {
	requests prometheus.Counter
	kn       prometheus.Observer
}

type probeKey struct{ container, kind, result string }

// Sources are the gauges' values, read at scrape time, so the request
// path does not maintain them twice.
type Sources struct {
	InFlight   func() int64
	QueueDepth func() int64
	Ready      func() bool
	// HealthHeld may be nil (none are ever held).
	HealthHeld func() int64
	// BreakerInFlight, when set (CONTAINER_CONCURRENCY > 0), is Knative's
	// kn_serving_queue_depth: requests waiting for a slot or holding one.
	BreakerInFlight func() int64
}

// Knative queue-proxy's names and buckets (knative.dev/serving v0.50.0,
// pkg/queue/request_metric.go), as its OpenTelemetry Prometheus exporter
// writes them.
var knLatencyBounds = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// knScope are the labels the exporter adds to every series of
// queue-proxy's instrumentation scope.
var knScope = prometheus.Labels{"otel_scope_name": "knative.dev/serving/pkg/queue", "otel_scope_version": "", "otel_scope_schema_url": ""}

// latencyBounds are the request duration buckets, in seconds: from well
// under a loopback round trip up to the default revision timeout.
var latencyBounds = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// New registers the gate's metrics on a registry of their own; errLog
// gets the metrics page's errors.
func New(src Sources, errLog *log.Logger) *Metrics {
	if src.HealthHeld == nil {
		src.HealthHeld = func() int64 { return 0 }
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "podgate_requests_total",
			Help: "Requests proxied to the serving container, by response status code (health checks excluded; 499: the client left first).",
		}, []string{"code"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "podgate_request_duration_seconds",
			Help:    "Time from a request's arrival to the end of its response.",
			Buckets: latencyBounds,
		}),
		holds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "podgate_ridethrough_holds_total",
			Help: "Requests held because the serving container refused the connection.",
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "podgate_ridethrough_retries_total",
			Help: "Connection attempts repeated for held requests.",
		}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "podgate_ridethrough_held",
			Help: "Requests held right now.",
		}),
		upstream: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "podgate_upstream_errors_total",
			Help: "Requests that failed after reaching the serving container (not replayed).",
		}),
		containers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "podgate_container_ready",
			Help: "1 when the container counts as ready.",
		}, []string{"container"}),
		probeVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "podgate_probe_results_total",
			Help: "Probe attempts run by the gate, by container, kind and result.",
		}, []string{"container", "kind", "result"}),
		probes: map[probeKey]prometheus.Counter{},
	}
	m.reg.MustRegister(
		m.requests, m.latency, m.holds, m.retries, m.held, m.upstream, m.containers, m.probeVec,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "podgate_requests_in_flight",
			Help: "Requests arrived and not yet answered.",
		}, func() float64 { return float64(src.InFlight()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "podgate_queue_depth",
			Help: "Requests waiting for a CONTAINER_CONCURRENCY slot.",
		}, func() float64 { return float64(src.QueueDepth()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "podgate_ready",
			Help: "1 when the gate answers health checks with ready.",
		}, func() float64 { return b2f(src.Ready()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "podgate_health_checks_held",
			Help: "Health checks held until every container is ready (a periodSeconds: 0 readiness probe, before the pod was first ready).",
		}, func() float64 { return float64(src.HealthHeld()) }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m.registerDoor()
	m.registerKnative(src)
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog: errLog,
		// A collector that fails (say /proc unreadable) costs its own
		// series, not the whole page.
		ErrorHandling: promhttp.ContinueOnError,
	})
	return m
}

// registerDoor registers the counts of requests held while not every
// container is ready, and handed off.
func (m *Metrics) registerDoor() {
	m.rholds = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "podgate_readiness_holds_total",
		Help: "Requests held at the door because not every container was ready.",
	})
	m.rheld = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "podgate_readiness_held",
		Help: "Requests held at the door right now, until every container is ready.",
	})
	m.handoffs = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "podgate_handoffs_total",
		Help: "Held requests handed to Knative's activator (PODGATE_HANDOFF_URL) because the pod was out of the endpoints.",
	})
	m.reg.MustRegister(m.rholds, m.rheld, m.handoffs)
}

// registerKnative registers queue-proxy's own metrics.
func (m *Metrics) registerKnative(src Sources) {
	m.knVec = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:        "kn_serving_invocation_duration_seconds",
		Help:        "The duration of task execution",
		Buckets:     knLatencyBounds,
		ConstLabels: knScope,
	}, []string{"http_response_status_code"})
	m.reg.MustRegister(m.knVec)
	if src.BreakerInFlight != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "kn_serving_queue_depth",
			Help:        "Number of current requests in the queue",
			ConstLabels: knScope,
		}, func() float64 { return float64(src.BreakerInFlight()) }))
	}
}

// Request records one proxied request; invocation: it also counts in
// Knative's kn_serving_invocation_duration_seconds, which leaves out
// requests carrying a probe header (K-Network-Probe) that were proxied.
func (m *Metrics) Request(code int, d time.Duration, invocation bool) {
	if code < 0 || code >= len(m.codes) {
		code = 0
	}
	c := m.codes[code].Load()
	if c == nil {
		// Racing first requests resolve the same children; either store
		// wins. Resolving Knative's child only at its first observation
		// would need a second pointer: a series of count 0 for a code
		// answered only to probes is the price.
		label := strconv.Itoa(code)
		c = &codeRef{requests: m.requests.WithLabelValues(label), kn: m.knVec.WithLabelValues(label)}
		m.codes[code].Store(c)
	}
	c.requests.Inc()
	s := d.Seconds()
	m.latency.Observe(s)
	if invocation {
		c.kn.Observe(s)
	}
}

// HoldStarted and HoldEnded bracket a request held by the ride-through.
func (m *Metrics) HoldStarted() {
	m.holds.Inc()
	m.held.Inc()
}

// HoldEnded: see HoldStarted.
func (m *Metrics) HoldEnded() { m.held.Dec() }

// ReadinessHoldStarted counts a request held at the door while not every
// container is ready; ReadinessHoldEnded ends its hold.
func (m *Metrics) ReadinessHoldStarted() {
	m.rholds.Inc()
	m.rheld.Inc()
}

// ReadinessHoldEnded: see ReadinessHoldStarted.
func (m *Metrics) ReadinessHoldEnded() { m.rheld.Dec() }

// HandedOff counts a held request handed to Knative's activator.
func (m *Metrics) HandedOff() { m.handoffs.Inc() }

// Retried counts one more connection attempt for a held request.
func (m *Metrics) Retried() { m.retries.Inc() }

// UpstreamError counts a request that failed after it may have reached
// the container.
func (m *Metrics) UpstreamError() { m.upstream.Inc() }

// ContainerReady sets whether a container counts as ready.
func (m *Metrics) ContainerReady(name string, ready bool) {
	m.containers.WithLabelValues(name).Set(b2f(ready))
}

// ProbeResult counts a probe attempt. The aggressive prober runs one every
// few milliseconds, so children are kept rather than looked up (and their
// label slice allocated) each time.
func (m *Metrics) ProbeResult(container, kind string, r probe.Result) {
	k := probeKey{container, kind, r.String()}
	m.probesMu.Lock()
	c, ok := m.probes[k]
	if !ok {
		c = m.probeVec.WithLabelValues(k.container, k.kind, k.result)
		m.probes[k] = c
	}
	m.probesMu.Unlock()
	c.Inc()
}

// ServeHTTP serves the metrics page (text or any format promhttp
// negotiates).
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) { m.handler.ServeHTTP(w, r) }

// Registry is the gate's own registry: register more collectors on it, or
// gather it into another.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

package gatestatus

import "github.com/prometheus/client_golang/prometheus"

// Request verbs and outcomes, as the metrics label them.
const (
	verbList  = "list"
	verbWatch = "watch"
	verbPatch = "patch"
	verbOther = "other"

	outcomeOK       = "ok"
	outcomeRefused  = "refused"
	outcomeFailed   = "failed"
	outcomeNotReady = "not_ready"
)

// metrics are the service's Prometheus series, on a registry of its own
// (one service per process, several in a test).
type metrics struct {
	requests       *prometheus.CounterVec
	watchesOpen    prometheus.Gauge
	writes         *prometheus.CounterVec
	writesMerged   prometheus.Counter
	events         *prometheus.CounterVec
	apiWatchesOpen prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "podgate_node_status_requests_total",
			Help: "Requests of gates, by verb (list, watch, patch, other) and outcome (ok, refused, failed, not_ready).",
		}, []string{"verb", "outcome"}),
		watchesOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "podgate_node_status_watches_open",
			Help: "Watches of gates open now, all served from the node's one informer.",
		}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "podgate_node_status_writes_total",
			Help: "Condition writes forwarded to the API server, by result (forwarded, failed).",
		}, []string{"result"}),
		writesMerged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "podgate_node_status_writes_coalesced_total",
			Help: "Condition writes of gates replaced by a later value of the same pod before they were forwarded.",
		}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "podgate_node_status_events_total",
			Help: "Events written on pods, by reason.",
		}, []string{"reason"}),
		apiWatchesOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "podgate_node_status_api_watches_open",
			Help: "Watches this service holds open on the API server (one: the node's pods).",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.watchesOpen, m.writes, m.writesMerged, m.events, m.apiWatchesOpen} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

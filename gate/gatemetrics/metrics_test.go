package gatemetrics

import (
	"fmt"
	"io"
	"log"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/podgate/podgate/probe"
)

func testMetrics(inFlight, depth int64, ready bool) *Metrics {
	return New(Sources{
		InFlight:   func() int64 { return inFlight },
		QueueDepth: func() int64 { return depth },
		Ready:      func() bool { return ready },
	}, log.New(io.Discard, "", 0))
}

func TestRequestCounting(t *testing.T) {
	for _, tc := range []struct {
		name   string
		codes  []int
		series int
		want   map[string]float64 // code label -> count
	}{
		{name: "no request, no series", codes: nil, series: 0, want: map[string]float64{}},
		{name: "a code's series appears with its first request", codes: []int{200, 200, 404, 200},
			series: 2, want: map[string]float64{"200": 3, "404": 1}},
		{name: "client gone is 499", codes: []int{499}, series: 1, want: map[string]float64{"499": 1}},
		{name: "a code outside 0-599 counts as 0", codes: []int{-1, 600, 1000}, series: 1, want: map[string]float64{"0": 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := testMetrics(0, 0, false)
			for _, c := range tc.codes {
				m.Request(c, 3*time.Millisecond, true)
			}
			if n := testutil.CollectAndCount(m.requests); n != tc.series {
				t.Errorf("%d podgate_requests_total series, want %d", n, tc.series)
			}
			for code, want := range tc.want {
				if got := testutil.ToFloat64(m.requests.WithLabelValues(code)); got != want {
					t.Errorf(`podgate_requests_total{code=%q} = %v, want %v`, code, got, want)
				}
			}
			hist := fmt.Sprintf(`# HELP podgate_request_duration_seconds Time from a request's arrival to the end of its response.
# TYPE podgate_request_duration_seconds histogram
podgate_request_duration_seconds_bucket{le="0.0005"} 0
podgate_request_duration_seconds_bucket{le="0.001"} 0
podgate_request_duration_seconds_bucket{le="0.0025"} 0
podgate_request_duration_seconds_bucket{le="0.005"} %[1]d
podgate_request_duration_seconds_bucket{le="0.01"} %[1]d
podgate_request_duration_seconds_bucket{le="0.025"} %[1]d
podgate_request_duration_seconds_bucket{le="0.05"} %[1]d
podgate_request_duration_seconds_bucket{le="0.1"} %[1]d
podgate_request_duration_seconds_bucket{le="0.25"} %[1]d
podgate_request_duration_seconds_bucket{le="0.5"} %[1]d
podgate_request_duration_seconds_bucket{le="1"} %[1]d
podgate_request_duration_seconds_bucket{le="2.5"} %[1]d
podgate_request_duration_seconds_bucket{le="5"} %[1]d
podgate_request_duration_seconds_bucket{le="10"} %[1]d
podgate_request_duration_seconds_bucket{le="30"} %[1]d
podgate_request_duration_seconds_bucket{le="60"} %[1]d
podgate_request_duration_seconds_bucket{le="300"} %[1]d
podgate_request_duration_seconds_bucket{le="+Inf"} %[1]d
podgate_request_duration_seconds_sum %[2]g
podgate_request_duration_seconds_count %[1]d
`, len(tc.codes), 0.003*float64(len(tc.codes)))
			if err := testutil.CollectAndCompare(m.latency, strings.NewReader(hist)); err != nil {
				t.Error(err)
			}
		})
	}
}

// The request path is on every proxied request: once a code's counter is
// resolved, counting costs no allocation.
func TestRequestCountingAllocatesNothing(t *testing.T) {
	m := testMetrics(0, 0, false)
	m.Request(200, time.Millisecond, true)
	if n := testing.AllocsPerRun(1000, func() { m.Request(200, time.Millisecond, true) }); n != 0 {
		t.Errorf("request() allocates %v times per call, want 0", n)
	}
}

func TestRideThroughAndProbeCounting(t *testing.T) {
	m := testMetrics(0, 0, false)
	m.HoldStarted()
	m.HoldStarted()
	m.Retried()
	m.HoldEnded()
	m.UpstreamError()
	for _, r := range []probe.Result{probe.Failure, probe.Failure, probe.Success} {
		m.ProbeResult("app", "readiness", r)
	}
	m.ProbeResult("cache", "liveness", probe.Success)
	m.ContainerReady("app", true)
	m.ContainerReady("cache", true)
	m.ContainerReady("cache", false)
	want := `# HELP podgate_ridethrough_holds_total Requests held because the serving container refused the connection.
# TYPE podgate_ridethrough_holds_total counter
podgate_ridethrough_holds_total 2
# HELP podgate_ridethrough_retries_total Connection attempts repeated for held requests.
# TYPE podgate_ridethrough_retries_total counter
podgate_ridethrough_retries_total 1
# HELP podgate_ridethrough_held Requests held right now.
# TYPE podgate_ridethrough_held gauge
podgate_ridethrough_held 1
# HELP podgate_upstream_errors_total Requests that failed after reaching the serving container (not replayed).
# TYPE podgate_upstream_errors_total counter
podgate_upstream_errors_total 1
# HELP podgate_probe_results_total Probe attempts run by the gate, by container, kind and result.
# TYPE podgate_probe_results_total counter
podgate_probe_results_total{container="app",kind="readiness",result="failure"} 2
podgate_probe_results_total{container="app",kind="readiness",result="success"} 1
podgate_probe_results_total{container="cache",kind="liveness",result="success"} 1
# HELP podgate_container_ready 1 when the container counts as ready.
# TYPE podgate_container_ready gauge
podgate_container_ready{container="app"} 1
podgate_container_ready{container="cache"} 0
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"podgate_ridethrough_holds_total", "podgate_ridethrough_retries_total", "podgate_ridethrough_held",
		"podgate_upstream_errors_total", "podgate_probe_results_total", "podgate_container_ready"); err != nil {
		t.Error(err)
	}
}

func TestGaugesReadAtScrape(t *testing.T) {
	for _, tc := range []struct {
		name     string
		inFlight int64
		depth    int64
		ready    bool
	}{
		{name: "idle and not ready", inFlight: 0, depth: 0, ready: false},
		{name: "busy with a queue and ready", inFlight: 7, depth: 3, ready: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := testMetrics(tc.inFlight, tc.depth, tc.ready)
			want := fmt.Sprintf(`# HELP podgate_requests_in_flight Requests arrived and not yet answered.
# TYPE podgate_requests_in_flight gauge
podgate_requests_in_flight %d
# HELP podgate_queue_depth Requests waiting for a CONTAINER_CONCURRENCY slot.
# TYPE podgate_queue_depth gauge
podgate_queue_depth %d
# HELP podgate_ready 1 when the gate answers health checks with ready.
# TYPE podgate_ready gauge
podgate_ready %v
`, tc.inFlight, tc.depth, b2f(tc.ready))
			if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
				"podgate_requests_in_flight", "podgate_queue_depth", "podgate_ready"); err != nil {
				t.Error(err)
			}
		})
	}
}

// BenchmarkMetricsRequest is the metrics' share of every proxied request,
// from every core at once.
//
//	go test -run '^$' -bench MetricsRequest -benchmem ./gate/gatemetrics/
func BenchmarkMetricsRequest(b *testing.B) {
	m := testMetrics(0, 0, true)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Request(200, 1500*time.Microsecond, true)
		}
	})
}

// TestKnativeQueueProxyNames pins the series a user of Knative's
// queue-proxy (request-metrics-protocol: prometheus) scrapes on port 9091:
// the names, help, buckets and labels its OpenTelemetry exporter writes.
func TestKnativeQueueProxyNames(t *testing.T) {
	for _, tc := range []struct {
		name      string
		breaker   bool // CONTAINER_CONCURRENCY > 0
		requests  []bool
		want      string
		wantNames []string
	}{
		{name: "the invocation histogram counts requests without a probe header, by status; no queue depth without a limit",
			requests: []bool{true, true, false},
			want: `# HELP kn_serving_invocation_duration_seconds The duration of task execution
# TYPE kn_serving_invocation_duration_seconds histogram
kn_serving_invocation_duration_seconds_bucket{http_response_status_code="200",otel_scope_name="knative.dev/serving/pkg/queue",otel_scope_schema_url="",otel_scope_version="",le="0.005"} 0
kn_serving_invocation_duration_seconds_bucket{http_response_status_code="200",otel_scope_name="knative.dev/serving/pkg/queue",otel_scope_schema_url="",otel_scope_version="",le="0.01"} 0
kn_serving_invocation_duration_seconds_bucket{http_response_status_code="200",otel_scope_name="knative.dev/serving/pkg/queue",otel_scope_schema_url="",otel_scope_version="",le="0.025"} 2
kn_serving_invocation_duration_seconds_bucket{http_response_status_code="200",otel_scope_name="knative.dev/serving/pkg/queue",otel_scope_schema_url="",otel_scope_version="",le="0.05"} 2
kn_serving_invocation_duration_seconds_bucket{http_response_status_code="200",otel_scope_name="knative.dev/serving/pkg/queue",otel_scope_schema_url="",otel_scope_version="",le="0.075"} 2
kn_serving_invocation_duration_seconds_bucket{http_response_status_code="200",otel_scope_name="knative.dev/serving/pkg/queue",otel_scope_schema_url="",otel_scope_version="",le="0.1"} 2
kn_serving_invocation_duration_seconds_bucket{http_response_status_code="200",otel_scope_name="knative.dev/serving/pkg/queue",otel_scope_schema_url="",otel_scope_version="",le="0.25"} 2
kn_serving_invocation_duration_seconds_bucket{http_response_status_code="200",otel_scope_name="knative.dev/serving/pkg/queue",otel_scope_schema_url="",otel_scope_version="",le="0.5"} 2
kn_serving_invocation_duration_seconds_bucket{http_response_status_code="200",otel_scope_name="knative.dev/serving/pkg/queue",otel_scope_schema_url="",otel_scope_version="",le="0.75"} 2
kn_serving_invocation_duration_seconds_bucket{http_response_status_code="200",otel_scope_name="knative.dev/serving/pkg/queue",otel_scope_schema_url="",otel_scope_version="",le="1"} 2
kn_serving_invocation_duration_seconds_bucket{http_response_status_code="200",otel_scope_name="knative.dev/serving/pkg/queue",otel_scope_schema_url="",otel_scope_version="",le="2.5"} 2
kn_serving_invocation_duration_seconds_bucket{http_response_status_code="200",otel_scope_name="knative.dev/serving/pkg/queue",otel_scope_schema_url="",otel_scope_version="",le="5"} 2
kn_serving_invocation_duration_seconds_bucket{http_response_status_code="200",otel_scope_name="knative.dev/serving/pkg/queue",otel_scope_schema_url="",otel_scope_version="",le="7.5"} 2
kn_serving_invocation_duration_seconds_bucket{http_response_status_code="200",otel_scope_name="knative.dev/serving/pkg/queue",otel_scope_schema_url="",otel_scope_version="",le="10"} 2
kn_serving_invocation_duration_seconds_bucket{http_response_status_code="200",otel_scope_name="knative.dev/serving/pkg/queue",otel_scope_schema_url="",otel_scope_version="",le="+Inf"} 2
kn_serving_invocation_duration_seconds_sum{http_response_status_code="200",otel_scope_name="knative.dev/serving/pkg/queue",otel_scope_schema_url="",otel_scope_version=""} 0.04
kn_serving_invocation_duration_seconds_count{http_response_status_code="200",otel_scope_name="knative.dev/serving/pkg/queue",otel_scope_schema_url="",otel_scope_version=""} 2
`,
			wantNames: []string{"kn_serving_invocation_duration_seconds"}},
		{name: "with a concurrency limit the queue depth is what waits for or holds a slot",
			breaker: true,
			want: `# HELP kn_serving_queue_depth Number of current requests in the queue
# TYPE kn_serving_queue_depth gauge
kn_serving_queue_depth{otel_scope_name="knative.dev/serving/pkg/queue",otel_scope_schema_url="",otel_scope_version=""} 7
`,
			wantNames: []string{"kn_serving_queue_depth"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := Sources{InFlight: func() int64 { return 0 }, QueueDepth: func() int64 { return 0 }, Ready: func() bool { return true }}
			if tc.breaker {
				src.BreakerInFlight = func() int64 { return 7 }
			}
			m := New(src, log.New(io.Discard, "", 0))
			for _, invocation := range tc.requests {
				m.Request(200, 20*time.Millisecond, invocation)
			}
			if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(tc.want), tc.wantNames...); err != nil {
				t.Error(err)
			}
			if n, err := testutil.GatherAndCount(m.Registry(), "kn_serving_queue_depth"); err != nil || (n == 1) != tc.breaker {
				t.Errorf("kn_serving_queue_depth series: %d (%v), want it only with a limit", n, err)
			}
		})
	}
}

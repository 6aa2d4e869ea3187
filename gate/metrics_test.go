package gate

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
)

// TestMetricsPageOverSocket scrapes a running gate's metrics port: every
// documented family is there with its type, and the page passes
// Prometheus' own naming lint.
func TestMetricsPageOverSocket(t *testing.T) {
	upstream := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}))
	cfg := gateConfig(t, upstream)
	cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(portOf(t, upstream), 0)}
	tg := startGate(t, cfg, Options{})
	tg.waitReady(t, true)
	if code, _, _ := tg.do(t, http.MethodGet, tg.url("/"), nil, nil); code != http.StatusTeapot {
		t.Fatalf("request through the gate: %d, want 418", code)
	}
	// The count lands after the response is written.
	eventually(t, "the request is counted", func() bool {
		return strings.Contains(tg.metricsText(t), `podgate_requests_total{code="418"} 1`)
	})
	page := tg.metricsText(t)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(page))
	if err != nil {
		t.Fatalf("the page does not parse as Prometheus text: %v\n%s", err, page)
	}
	for name, typ := range map[string]dto.MetricType{
		"podgate_requests_total":                 dto.MetricType_COUNTER,
		"podgate_request_duration_seconds":       dto.MetricType_HISTOGRAM,
		"podgate_requests_in_flight":             dto.MetricType_GAUGE,
		"podgate_queue_depth":                    dto.MetricType_GAUGE,
		"podgate_ridethrough_holds_total":        dto.MetricType_COUNTER,
		"podgate_ridethrough_retries_total":      dto.MetricType_COUNTER,
		"podgate_ridethrough_held":               dto.MetricType_GAUGE,
		"podgate_upstream_errors_total":          dto.MetricType_COUNTER,
		"podgate_ready":                          dto.MetricType_GAUGE,
		"podgate_health_checks_held":             dto.MetricType_GAUGE,
		"podgate_container_ready":                dto.MetricType_GAUGE,
		"podgate_probe_results_total":            dto.MetricType_COUNTER,
		"kn_serving_invocation_duration_seconds": dto.MetricType_HISTOGRAM,
		"go_goroutines":                          dto.MetricType_GAUGE,
		"go_memstats_heap_inuse_bytes":           dto.MetricType_GAUGE,
		"process_resident_memory_bytes":          dto.MetricType_GAUGE,
	} {
		f, ok := families[name]
		switch {
		case !ok:
			t.Errorf("%s missing from the page", name)
		case f.GetType() != typ:
			t.Errorf("%s has type %v, want %v", name, f.GetType(), typ)
		}
	}
	// The serving container's readiness probe ran and passed.
	if f := families["podgate_probe_results_total"]; f != nil {
		found := false
		for _, s := range f.GetMetric() {
			lbl := map[string]string{}
			for _, l := range s.GetLabel() {
				lbl[l.GetName()] = l.GetValue()
			}
			found = found || (lbl["container"] == "user-container" && lbl["kind"] == "readiness" &&
				lbl["result"] == "success" && s.GetCounter().GetValue() >= 1)
		}
		if !found {
			t.Errorf("no successful readiness probe of user-container counted:\n%s", page)
		}
	}
	problems, err := promlint.New(strings.NewReader(page)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "podgate_") {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
}

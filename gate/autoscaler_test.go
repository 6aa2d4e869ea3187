package gate

import (
	"net/http"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/test/testapp"
)

// TestAutoscalerStatsCountWhatQueueProxyCounts: the autoscaler's
// statistics count the requests the gate proxies — an activator's request
// as proxied, a request with K-Network-Probe: queue but no health-check
// User-Agent too — and not the health checks and route checks the gate
// answers itself.
func TestAutoscalerStatsCountWhatQueueProxyCounts(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	app := startApp(t, testapp.Config{})
	cfg := gateConfig(t, app.Addr())
	cfg.Pod = "hello-00001-deployment-abc"
	tg := startGate(t, cfg, Options{Clock: clk})
	tg.waitReady(t, true)
	for _, tc := range []struct {
		name   string
		header http.Header
		code   int // 0: whatever the health check answers
	}{
		{"a request", nil, http.StatusOK},
		{"the activator's request", http.Header{"K-Proxy-Request": {"activator"}}, http.StatusOK},
		{"K-Network-Probe: queue without a health-check User-Agent is proxied", http.Header{"K-Network-Probe": {"queue"}}, http.StatusOK},
		{"the kubelet's health check", http.Header{"User-Agent": {"kube-probe/1.37"}, "K-Network-Probe": {"queue"}}, http.StatusOK},
		{"the activator's health check", http.Header{"User-Agent": {"Knative-Activator-Probe"}, "K-Network-Probe": {"queue"}}, http.StatusOK},
		{"a mesh-rewritten kubelet probe", http.Header{"K-Kubelet-Probe": {"queue"}}, 0},
		{"a route check", http.Header{"K-Network-Probe": {"probe"}, "K-Network-Hash": {"h"}}, http.StatusOK},
	} {
		if code, _, _ := tg.do(t, http.MethodGet, tg.url("/"), nil, tc.header); tc.code != 0 && code != tc.code {
			t.Fatalf("%s: %d, want %d", tc.name, code, tc.code)
		}
	}
	// The requests are done (their ends are counted after the response);
	// one second later, the window closes.
	eventually(t, "no request in flight", func() bool { return tg.Drainer().InFlight() == 0 })
	clk.Step(time.Second)
	eventually(t, "the first report", func() bool { return tg.AutoscalerStats().GetProcessUptime() >= 1 })
	s := tg.AutoscalerStats()
	if s.GetPodName() != cfg.Pod || s.GetRequestCount() != 3 || s.GetProxiedRequestCount() != 1 {
		t.Errorf("Stat %v; want pod %s, 3 requests, 1 of them proxied", s, cfg.Pod)
	}
}

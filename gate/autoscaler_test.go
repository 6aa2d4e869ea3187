package gate

import (
	"net/http"
	"testing"
	"time"

	"github.com/podgate/podgate/test/testapp"
)

// TestAutoscalerStatsCountWhatQueueProxyCounts: the autoscaler's
// statistics count the requests the gate proxies — an activator's request
// as proxied, a request with K-Network-Probe: queue but no health-check
// User-Agent too — and not the health checks and route checks the gate
// answers itself.
func TestAutoscalerStatsCountWhatQueueProxyCounts(t *testing.T) {
	app := startApp(t, testapp.Config{})
	cfg := gateConfig(t, app.Addr())
	cfg.Pod = "hello-00001-deployment-abc"
	tg := startGate(t, cfg, Options{})
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
	// The statistics run on the real clock: their windows close every
	// second. The requests above fall into one or two of them.
	var requests, proxied float64
	seen := map[float64]bool{}
	deadline := time.Now().Add(testWait)
	for requests < 3 && time.Now().Before(deadline) {
		if s := tg.AutoscalerStats(); !seen[s.GetProcessUptime()] {
			seen[s.GetProcessUptime()] = true
			requests += s.GetRequestCount()
			proxied += s.GetProxiedRequestCount()
			if s.GetPodName() != cfg.Pod {
				t.Fatalf("Stat %v, want pod %s", s, cfg.Pod)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	// One window more: nothing late.
	for last := tg.AutoscalerStats().GetProcessUptime(); tg.AutoscalerStats().GetProcessUptime() == last && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	s := tg.AutoscalerStats()
	requests += s.GetRequestCount()
	proxied += s.GetProxiedRequestCount()
	if requests != 3 || proxied != 1 {
		t.Errorf("the windows count %v requests, %v of them proxied; want 3 and 1", requests, proxied)
	}
}

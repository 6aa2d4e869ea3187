package gate

import (
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/probe"
	"github.com/podgate/podgate/test/testapp"
)

// TestWatchedLivenessTakesTheContainerOutAndAKubeletCallDoesNotCount: the
// gate runs its copy of a watched liveness probe itself (real clock,
// every second, threshold 2: out after the first failure) and holds
// traffic; a call of /probe/… (which only an older injection's kubelet
// makes) is answered with the probe's verdict but counts for nothing.
func TestWatchedLivenessTakesTheContainerOutAndAKubeletCallDoesNotCount(t *testing.T) {
	app := startApp(t, testapp.Config{})
	cfg := gateConfig(t, app.Addr())
	live := httpProbe(portOf(t, app.Addr()), "/healthz", 1)
	live.FailureThreshold = 2
	cfg.WatchedProbes = map[string]contract.ContainerProbes{"app": {Liveness: live}}
	cfg.Containers = []string{"app"}
	tg := startGate(t, cfg, Options{})
	tg.waitReady(t, true)

	app.SetLive(false)
	for range 3 {
		if out := kubeletCall(t, tg, "app", contract.Liveness); out.Result != probe.Failure {
			t.Fatalf("/probe/app/liveness of a failing app: %v %q", out.Result, out.Message)
		}
	}
	tg.waitReady(t, false)
	v := tg.verbose(t)
	contains(t, "verbose readyz", v, "[-]app failed: liveness probe failed 1 time(s), threshold 2")
	contains(t, "verbose readyz", v, "liveness watched: httpGet, every 1s, success 1, failure 2")
	app.SetLive(true)
	tg.waitReady(t, true)
	// Every failure counted is one of the gate's own ticks: the three
	// calls above came before or while the first tick failed, and a
	// counted call would have shown as more failures than ticks.
	if m := tg.metricsText(t); strings.Contains(m, `kind="liveness",result="failure"} 3`) || strings.Contains(m, `kind="liveness",result="failure"} 4`) {
		t.Errorf("the kubelet's calls were counted:\n%s", m)
	}
}

// TestGateReadyAnswersForTheGateAlone: /readyz/gate (the injected gate
// container's kubelet readiness probe) passes while a sidecar fails its
// probe (that sidecar's own probe and the gate's condition say so), and
// fails while the gate drains.
func TestGateReadyAnswersForTheGateAlone(t *testing.T) {
	app := startApp(t, testapp.Config{})
	side := startApp(t, testapp.Config{})
	cfg := gateConfig(t, app.Addr())
	cfg.Containers = []string{"app", "side"}
	cfg.ReadinessContainers = []string{"side"}
	cfg.ReadinessProbes = []*corev1.Probe{httpProbe(portOf(t, side.Addr()), "/readyz", 1)}
	cfg.ExcludedContainers = []string{"log-shipper"}
	cfg.DrainQuietPeriod = 2 * time.Second // long enough to look at the drain
	tg := startGate(t, cfg, Options{})
	tg.waitReady(t, true)
	side.SetReady(false)
	tg.waitReady(t, false)
	if code, body, _ := tg.do(t, http.MethodGet, "http://"+tg.admin+contract.GateReadyPath, nil, nil); code != http.StatusOK || body != "ok\n" {
		t.Errorf("%s with a failing sidecar: %d %q, want 200 ok", contract.GateReadyPath, code, body)
	}
	v := tg.verbose(t)
	contains(t, "verbose readyz", v, "[-]side failed: readiness probe")
	contains(t, "verbose readyz", v, "[~]log-shipper excluded by podgate.dev/exclude-containers\n")
	tg.terminate()
	eventually(t, "/readyz/gate fails while draining", func() bool {
		code, body, _ := tg.do(t, http.MethodGet, "http://"+tg.admin+contract.GateReadyPath, nil, nil)
		return code == http.StatusServiceUnavailable && strings.Contains(body, "draining")
	})
}

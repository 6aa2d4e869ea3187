package gate

import (
	"context"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/probe"
	"github.com/podgate/podgate/test/testapp"
)

// TestHealthCheckHeaderMatrix pins queue-proxy's health-check protocol
// (docs/facts.md §4), answered by a gate whose only container is ready, not ready,
// or which is draining.
func TestHealthCheckHeaderMatrix(t *testing.T) {
	app := startApp(t, testapp.Config{Name: "app"})
	const kubelet, activator, autoscaler, curl = "kube-probe/1.37", "Knative-Activator-Probe", "Knative-Autoscaling-Probe", "curl/8.4.0"
	type header = http.Header
	for _, tc := range []struct {
		name       string
		state      string // ready, unready, draining
		header     header
		wantCode   int
		wantBody   string
		wantHeader header
	}{
		{"kubelet check of a ready gate is 200 queue", "ready",
			header{"User-Agent": {kubelet}, "K-Network-Probe": {"queue"}}, 200, "queue", nil},
		{"kubelet check of an unready gate is 503 without body", "unready",
			header{"User-Agent": {kubelet}, "K-Network-Probe": {"queue"}}, 503, "", nil},
		{"kubelet check while draining is 503 shutting down", "draining",
			header{"User-Agent": {kubelet}, "K-Network-Probe": {"queue"}}, 503, "shutting down\n", nil},
		{"kubelet check without probe header is 400", "ready",
			header{"User-Agent": {kubelet}}, 400, "unexpected probe header value: \n", nil},
		{"kubelet check with another probe header value is 400", "ready",
			header{"User-Agent": {kubelet}, "K-Network-Probe": {"activator"}}, 400, "unexpected probe header value: activator\n", nil},
		{"draining wins over a bad probe header", "draining",
			header{"User-Agent": {kubelet}}, 503, "shutting down\n", nil},
		{"activator check is a health check", "ready",
			header{"User-Agent": {activator}, "K-Network-Probe": {"queue"}}, 200, "queue", nil},
		{"activator check of an unready gate is 503", "unready",
			header{"User-Agent": {activator}, "K-Network-Probe": {"queue"}}, 503, "", nil},
		{"autoscaler check is a health check", "ready",
			header{"User-Agent": {autoscaler}, "K-Network-Probe": {"queue"}}, 200, "queue", nil},
		{"K-Kubelet-Probe header makes a health check without the kubelet's UA", "ready",
			header{"User-Agent": {curl}, "K-Kubelet-Probe": {"value"}, "K-Network-Probe": {"queue"}}, 200, "queue", nil},
		{"K-Kubelet-Probe check of an unready gate is 503, not forwarded", "unready",
			header{"User-Agent": {curl}, "K-Kubelet-Probe": {"value"}, "K-Network-Probe": {"queue"}}, 503, "", nil},
		{"network probe echoes its hash", "ready",
			header{"K-Network-Probe": {"probe"}, "K-Network-Hash": {"abc123"}}, 200, "", header{"K-Network-Hash": {"abc123"}}},
		{"network probe echoes its hash even when not ready", "unready",
			header{"K-Network-Probe": {"probe"}, "K-Network-Hash": {"abc123"}}, 200, "", header{"K-Network-Hash": {"abc123"}}},
		{"network probe without hash is 400", "ready",
			header{"K-Network-Probe": {"probe"}}, 400, "a probe request must contain a non-empty \"K-Network-Hash\" header\n", nil},
		{"network probe while draining is 503 shutting down", "draining",
			header{"K-Network-Probe": {"probe"}, "K-Network-Hash": {"abc123"}}, 503, "shutting down\n", nil},
		{"a plain request goes to the app", "ready",
			header{"User-Agent": {curl}}, 200, "app\n", nil},
		{"K-Network-Probe: queue without a health-check UA goes to the app, as in queue-proxy", "ready",
			header{"User-Agent": {curl}, "K-Network-Probe": {"queue"}}, 200, "app\n", nil},
		{"a plain request goes to the app while draining", "draining",
			header{"User-Agent": {curl}}, 200, "app\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := gateConfig(t, app.Addr())
			cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(portOf(t, app.Addr()), 0)}
			if tc.state == "unready" {
				// Nothing listens on port 1 of 127.0.0.1: the probe fails.
				// Not aggressive: an aggressive probe would hold the check
				// until the pod is first ready (TestHeldHealthCheck…).
				cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(1, 1)}
			}
			tg := startGate(t, cfg, Options{})
			switch tc.state {
			case "ready":
				tg.waitReady(t, true)
			case "unready":
				eventually(t, "the probe has failed", func() bool { return tg.agg.Report()[0].Attempts > 0 })
			case "draining":
				tg.waitReady(t, true)
				tg.Drainer().Drain()
			}
			code, body, hdr := tg.do(t, http.MethodGet, tg.url("/any/path?x=1"), nil, tc.header)
			if code != tc.wantCode || body != tc.wantBody {
				t.Errorf("got %d %q, want %d %q", code, body, tc.wantCode, tc.wantBody)
			}
			for k, v := range tc.wantHeader {
				if hdr.Get(k) != v[0] {
					t.Errorf("response header %s = %q, want %q", k, hdr.Get(k), v[0])
				}
			}
		})
	}
}

// TestKubeletProbeOfTheGate runs, with the kubelet's own probe semantics
// (package probe), the readiness probe package admission/inject gives the gate
// container: httpGet / on the serving port with K-Network-Probe: queue.
func TestKubeletProbeOfTheGate(t *testing.T) {
	app := startApp(t, testapp.Config{})
	cfg := gateConfig(t, app.Addr())
	cfg.ReadinessProbes = []*corev1.Probe{httpProbe(portOf(t, app.Addr()), "/readyz", 0)}
	tg := startGate(t, cfg, Options{})
	host, port := splitHostPort(t, tg.serving)
	kubelet := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: "/", Port: intstr.FromInt(port),
		HTTPHeaders: []corev1.HTTPHeader{{Name: contract.NetworkProbeHeader, Value: contract.NetworkProbeQueue}},
	}}}
	run := func() probe.Outcome {
		return probe.NewRunner().Run(context.Background(), kubelet, probe.Target{PodIP: host})
	}
	tg.waitReady(t, true)
	if out := run(); out.Result != probe.Success {
		t.Errorf("kubelet probe of a ready gate: %v %q, want success", out.Result, out.Message)
	}
	app.SetReady(false)
	tg.waitReady(t, false)
	if out := run(); out.Result != probe.Failure || out.Message != "HTTP probe failed with statuscode: 503" {
		t.Errorf("kubelet probe of an unready gate: %v %q, want failure with statuscode 503", out.Result, out.Message)
	}
}

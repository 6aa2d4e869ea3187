package gate

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/gate/readiness"
	"github.com/podgate/podgate/probe"
	"github.com/podgate/podgate/test/testapp"
)

// The tests in this file pin the routed probes of pods injected by an
// older podgate (PODGATE_ROUTED_PROBES), whose kubelet still calls the
// admin port's /probe/<container>/<kind>: the gate answers and counts
// those calls as it did. The injector now leaves the probes on their
// containers and the gate watches a copy (watched_test.go).

// kubeletCall runs the probe the kubelet has after an older injection:
// httpGet on the admin port's /probe/<container>/<kind>, with the
// kubelet's semantics.
func kubeletCall(t *testing.T, tg *testGate, container string, kind contract.ProbeKind) probe.Outcome {
	t.Helper()
	host, port := splitHostPort(t, tg.admin)
	p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: contract.ProbePath(container, kind), Port: intstr.FromInt(port),
	}}}
	return probe.NewRunner().Run(context.Background(), p, probe.Target{PodIP: host})
}

func TestAnOlderInjectionsRoutedLivenessDropsReadinessBeforeTheKill(t *testing.T) {
	for _, tc := range []struct {
		name      string
		threshold int32
		// dropAfter is the failure after which readiness drops: one short
		// of the threshold, or the threshold itself when it is 1.
		dropAfter int
	}{
		{"threshold 3 drops readiness after the second failure", 3, 2},
		{"threshold 1 drops readiness after the first failure", 1, 1},
		{"unset threshold means 3", 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := startApp(t, testapp.Config{})
			cfg := gateConfig(t, app.Addr())
			cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(portOf(t, app.Addr()), 0)}
			cfg.ReadinessContainers = []string{"app"}
			live := httpProbe(portOf(t, app.Addr()), "/healthz", 10)
			live.FailureThreshold = tc.threshold
			cfg.WatchedProbes, cfg.ProbesRouted = map[string]contract.ContainerProbes{"app": {Liveness: live}}, true
			tg := startGate(t, cfg, Options{})
			tg.waitReady(t, true)

			if out := kubeletCall(t, tg, "app", contract.Liveness); out.Result != probe.Success {
				t.Fatalf("liveness of a live app: %v %q", out.Result, out.Message)
			}
			app.SetLive(false)
			for i := 1; i <= tc.dropAfter; i++ {
				out := kubeletCall(t, tg, "app", contract.Liveness)
				if out.Result != probe.Failure || out.Message != "HTTP probe failed with statuscode: 500" {
					t.Fatalf("failure %d: kubelet saw %v %q, want failure with statuscode 500", i, out.Result, out.Message)
				}
				if want := i < tc.dropAfter; tg.Ready() != want {
					t.Fatalf("after %d liveness failure(s): ready %v, want %v", i, tg.Ready(), want)
				}
			}
			contains(t, "verbose readyz", tg.verbose(t), "[-]app failed: liveness probe failed")
			app.SetLive(true)
			if out := kubeletCall(t, tg, "app", contract.Liveness); out.Result != probe.Success {
				t.Fatalf("liveness after recovery: %v %q", out.Result, out.Message)
			}
			if !tg.Ready() {
				t.Error("not ready after liveness passed again")
			}
			contains(t, "metrics", tg.metricsText(t), `podgate_probe_results_total{container="app",kind="liveness",result="failure"} `+strconv.Itoa(tc.dropAfter))
		})
	}
}

// TestHungContainerLivenessCounts: a container that hangs makes the
// kubelet's call time out; the gate still counts that failure, and
// answers before the caller gives up.
func TestHungContainerLivenessCounts(t *testing.T) {
	release := make(chan struct{})
	upstream := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	defer close(release)
	cfg := gateConfig(t, upstream)
	live := httpProbe(portOf(t, upstream), "/healthz", 10)
	live.TimeoutSeconds = 1
	live.FailureThreshold = 2
	cfg.WatchedProbes, cfg.ProbesRouted = map[string]contract.ContainerProbes{readiness.DefaultServingContainer: {Liveness: live}}, true
	tg := startGate(t, cfg, Options{})
	tg.waitReady(t, true)
	host, port := splitHostPort(t, tg.admin)
	kubelet := &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: contract.ProbePath(readiness.DefaultServingContainer, contract.Liveness), Port: intstr.FromInt(port),
		}},
		TimeoutSeconds: 1,
	}
	out := probe.NewRunner().Run(context.Background(), kubelet, probe.Target{PodIP: host})
	// Normally the gate's 500 arrives first; on a stalled machine the
	// caller's own timeout may win. A failure either way.
	if out.Result != probe.Failure {
		t.Errorf("kubelet saw %v %q, want a failure", out.Result, out.Message)
	}
	tg.waitReady(t, false)
	contains(t, "verbose readyz", tg.verbose(t), "liveness probe failed 1 time(s), threshold 2")
}

// TestLivenessHoldEndsWithTheReplacedContainer: the kubelet kills the
// container after its liveness failures; the new one answers its readiness
// probe, so the hold of the old one ends without waiting for the next
// liveness call.
func TestLivenessHoldEndsWithTheReplacedContainer(t *testing.T) {
	app := startApp(t, testapp.Config{})
	addr := app.Addr()
	cfg := gateConfig(t, addr)
	cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(portOf(t, addr), 0)}
	cfg.ReadinessContainers = []string{"app"}
	live := httpProbe(portOf(t, addr), "/healthz", 10)
	live.FailureThreshold = 1
	cfg.WatchedProbes, cfg.ProbesRouted = map[string]contract.ContainerProbes{"app": {Liveness: live}}, true
	tg := startGate(t, cfg, Options{})
	tg.waitReady(t, true)
	app.SetLive(false)
	kubeletCall(t, tg, "app", contract.Liveness)
	if tg.Ready() {
		t.Fatal("ready after the liveness failure")
	}
	stopApp(t, app) // the kill
	before := tg.agg.Report()[0].Attempts
	eventually(t, "the readiness probe saw the container gone", func() bool {
		r := tg.agg.Report()[0]
		return r.Attempts > before && r.LastResult == "failure"
	})
	startApp(t, testapp.Config{Addr: addr}) // the restart, live again
	tg.waitReady(t, true)
}

func TestRoutedStartupProbe(t *testing.T) {
	app := startApp(t, testapp.Config{})
	cfg := gateConfig(t, app.Addr())
	cfg.ReadinessContainers = []string{"app"}
	cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(portOf(t, app.Addr()), 0)}
	cfg.WatchedProbes, cfg.ProbesRouted = map[string]contract.ContainerProbes{"app": {Startup: httpProbe(portOf(t, app.Addr()), "/readyz", 1)}}, true
	tg := startGate(t, cfg, Options{})
	tg.waitReady(t, true)
	app.SetReady(false)
	if out := kubeletCall(t, tg, "app", contract.Startup); out.Result != probe.Failure {
		t.Fatalf("startup of an unready app: %v %q", out.Result, out.Message)
	}
	if tg.Ready() {
		t.Error("ready while the startup probe fails")
	}
	app.SetReady(true)
	if out := kubeletCall(t, tg, "app", contract.Startup); out.Result != probe.Success {
		t.Fatalf("startup of a ready app: %v %q", out.Result, out.Message)
	}
	if !tg.Ready() {
		t.Error("not ready once the startup probe passed")
	}
}

// shortBodyServer answers every request with a body shorter than its
// Content-Length: an HTTP probe of it is a probe error, not a failure.
func shortBodyServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = http.ReadRequest(bufio.NewReader(c))
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
			c.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln.Addr().String()
}

// TestRoutedProbeErrorStaysAnError: the kubelet drops an errored probe
// rather than counting a failure; through the gate it must see an error too.
func TestRoutedProbeErrorStaysAnError(t *testing.T) {
	app := startApp(t, testapp.Config{})
	broken := shortBodyServer(t)
	cfg := gateConfig(t, app.Addr())
	live := httpProbe(portOf(t, broken), "/", 10)
	live.FailureThreshold = 1
	cfg.WatchedProbes, cfg.ProbesRouted = map[string]contract.ContainerProbes{"app": {Liveness: live}}, true
	tg := startGate(t, cfg, Options{})
	tg.waitReady(t, true)
	for i := 0; i < 3; i++ {
		out := kubeletCall(t, tg, "app", contract.Liveness)
		if out.Result != probe.Error {
			t.Fatalf("call %d: kubelet saw %v %q, want a probe error", i, out.Result, out.Message)
		}
	}
	if !tg.Ready() {
		t.Error("errored liveness probes dropped readiness; the kubelet ignores them")
	}
}

func TestRoutedProbeUnknown(t *testing.T) {
	app := startApp(t, testapp.Config{})
	cfg := gateConfig(t, app.Addr())
	cfg.WatchedProbes, cfg.ProbesRouted = map[string]contract.ContainerProbes{"app": {Liveness: httpProbe(portOf(t, app.Addr()), "/healthz", 1)}}, true
	tg := startGate(t, cfg, Options{})
	for _, tc := range []struct{ path, want string }{
		{"/probe/app/startup", `no startup probe of container "app" is routed through the gate`},
		{"/probe/other/liveness", `no liveness probe of container "other" is routed through the gate`},
		{"/probe/app/readiness", `kind "readiness" is neither`},
	} {
		code, body, _ := tg.do(t, http.MethodGet, "http://"+tg.admin+tc.path, nil, nil)
		if code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", tc.path, code)
		}
		contains(t, tc.path, body, tc.want)
	}
}

// TestRoutedOutcomeIsWhatProbingDirectlyGives runs each original probe
// three ways: directly (what the kubelet concludes without the gate),
// through /probe/… as the kubelet calls it, and through /probe/… as
// podgate's node agent calls it (reading the gate's message header). The
// verdict class is the same every way; the node agent's message is the
// direct one; the kubelet's is the direct one wherever HTTP can carry it.
func TestRoutedOutcomeIsWhatProbingDirectlyGives(t *testing.T) {
	app, err := testapp.Start(testapp.Config{Addr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopApp(t, app) })
	status := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var code int
		_, _ = fmt.Sscanf(r.URL.Path, "/%d", &code)
		w.Header().Set("Location", "http://192.0.2.1/elsewhere")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "body of "+r.URL.Path)
	}))
	appPort, statusPort, grpcPort := portOf(t, app.Addr()), portOf(t, status), portOf(t, app.GRPCAddr())
	closedPort := portOf(t, closedAddr(t))
	grpcLiveness := "liveness"

	for _, tc := range []struct {
		name  string
		probe *corev1.Probe
		setup func()
		want  probe.Result
		// kubeletMsg is what the kubelet records through the gate when it
		// cannot be the direct message ("" = the direct one).
		kubeletMsg string
	}{
		{name: "HTTP success", probe: httpProbe(appPort, "/healthz", 1), want: probe.Success},
		{
			name:  "HTTP redirect to another host is a warning with the body",
			probe: httpProbe(appPort, "/redirect?loc=http://192.0.2.1/elsewhere", 1), want: probe.Warning,
		},
		{name: "HTTP 301 to another host is a warning with the body", probe: httpProbe(statusPort, "/301", 1), want: probe.Warning},
		{name: "HTTP 304 is a warning without body", probe: httpProbe(statusPort, "/304", 1), want: probe.Warning},
		{name: "HTTP 503 fails with its status code", probe: httpProbe(statusPort, "/503", 1), want: probe.Failure},
		{name: "HTTP 418 fails with its status code", probe: httpProbe(statusPort, "/418", 1), want: probe.Failure},
		{
			name: "HTTP 500 of a dead app fails with its status code", probe: httpProbe(appPort, "/healthz", 1),
			setup: func() { app.SetLive(false) }, want: probe.Failure,
		},
		{
			name:  "HTTP refused fails with the dial error",
			probe: httpProbe(closedPort, "/", 1), want: probe.Failure, kubeletMsg: "HTTP probe failed with statuscode: 500",
		},
		{
			name:  "TCP refused fails with the dial error",
			probe: tcpProbe(closedPort, 1), want: probe.Failure, kubeletMsg: "HTTP probe failed with statuscode: 500",
		},
		{name: "TCP success", probe: tcpProbe(appPort, 1), want: probe.Success},
		{
			name:  "gRPC NOT_SERVING fails with the health answer",
			probe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: int32(grpcPort), Service: &grpcLiveness}}},
			setup: func() { app.SetLive(false) }, want: probe.Failure, kubeletMsg: "HTTP probe failed with statuscode: 500",
		},
		{
			name:  "gRPC SERVING succeeds",
			probe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: int32(grpcPort), Service: &grpcLiveness}}},
			want:  probe.Success,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app.SetLive(true)
			if tc.setup != nil {
				tc.setup()
			}
			tc.probe.TimeoutSeconds = 5
			tc.probe.FailureThreshold = 100 // readiness holds do not matter here
			direct := probe.NewRunner().Run(context.Background(), tc.probe, probe.Target{PodIP: "127.0.0.1"})
			if direct.Result != tc.want {
				t.Fatalf("direct: %v %q, want %v", direct.Result, direct.Message, tc.want)
			}
			cfg := gateConfig(t, app.Addr())
			cfg.WatchedProbes, cfg.ProbesRouted = map[string]contract.ContainerProbes{"app": {Liveness: tc.probe, Startup: tc.probe}}, true
			tg := startGate(t, cfg, Options{})
			for _, kind := range []contract.ProbeKind{contract.Liveness, contract.Startup} {
				kubelet := routedCall(t, tg, "app", kind, "")
				wantKubelet := direct.Message
				if tc.kubeletMsg != "" {
					wantKubelet = tc.kubeletMsg
				}
				if kubelet.Result != tc.want || kubelet.Message != wantKubelet {
					t.Errorf("%s through the gate, as the kubelet sees it: %v %q; want %v %q", kind, kubelet.Result, kubelet.Message, tc.want, wantKubelet)
				}
				agent := routedCall(t, tg, "app", kind, contract.ProbeMessageHeader)
				if agent.Result != tc.want || agent.Message != direct.Message {
					t.Errorf("%s through the gate, as the node agent sees it: %v %q; want %v %q", kind, agent.Result, agent.Message, tc.want, direct.Message)
				}
			}
		})
	}
}

// routedCall is kubeletCall with the node agent's message header (or
// none, as the kubelet).
func routedCall(t *testing.T, tg *testGate, container string, kind contract.ProbeKind, header string) probe.Outcome {
	t.Helper()
	host, port := splitHostPort(t, tg.admin)
	p := &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: contract.ProbePath(container, kind), Port: intstr.FromInt(port),
		}},
		TimeoutSeconds: 10,
	}
	return probe.NewRunner().Run(context.Background(), p, probe.Target{PodIP: host, MessageHeader: header})
}

// closedAddr is a loopback address nothing listens on (it was just closed).
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestAStrangersRoutedProbeIsAnsweredButDoesNotCount: with an admin token,
// a routed probe from another address without it (another pod calling in
// a loop) gets the original verdict, but only the kubelet's calls (with
// the token the injector puts in the probe's headers) count toward the
// liveness drop.
func TestAStrangersRoutedProbeIsAnsweredButDoesNotCount(t *testing.T) {
	app := startApp(t, testapp.Config{})
	addr := app.Addr()
	cfg := gateConfig(t, addr)
	cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(portOf(t, addr), 0)}
	cfg.ReadinessContainers = []string{"app"}
	live := httpProbe(portOf(t, addr), "/healthz", 10)
	live.FailureThreshold = 1
	cfg.WatchedProbes, cfg.ProbesRouted = map[string]contract.ContainerProbes{"app": {Liveness: live}}, true
	cfg.AdminToken = "0123456789abcdef0123456789abcdef"
	tg := startGate(t, cfg, Options{})
	tg.waitReady(t, true)
	app.SetLive(false)
	// The gate listens on 127.0.0.1: a client bound to 127.0.0.2 is
	// another address.
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	stranger := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	url := "http://" + tg.admin + contract.ProbePath("app", contract.Liveness)
	for _, header := range []http.Header{nil, {contract.AdminTokenHeader: {"wrong"}}} {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header = header
		if req.Header == nil {
			req.Header = http.Header{}
		}
		resp, err := stranger.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("a failing liveness probe answered %d to a stranger", resp.StatusCode)
		}
		if !tg.Ready() {
			t.Fatal("a stranger's routed liveness call dropped readiness")
		}
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set(contract.AdminTokenHeader, cfg.AdminToken)
	resp, err := stranger.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if tg.Ready() {
		t.Error("the kubelet's routed liveness failure (with the token) did not drop readiness")
	}
}

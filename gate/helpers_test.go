package gate

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/test/syncbuf"
	"github.com/podgate/podgate/test/testapp"
)

// testWait bounds every wait in these tests; polls end as soon as their
// condition holds, so it only matters when something is broken.
const testWait = 30 * time.Second

// eventually polls cond until it holds or testWait passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// testGate is a Gate serving on 127.0.0.1:0.
type testGate struct {
	*Gate
	serving, admin, metrics string // host:port
	terminate               context.CancelFunc
	done                    chan error
	client                  *http.Client
	logs                    *syncbuf.Buffer
}

// startGate runs a gate until the test ends (then SIGTERM, drain, and a
// check that Serve returned cleanly).
func startGate(t testing.TB, cfg contract.Config, opts Options) *testGate {
	t.Helper()
	logs := &syncbuf.Buffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	opts.Config = cfg
	g, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	var ls Listeners
	for _, dst := range []*net.Listener{&ls.Serving, &ls.Admin, &ls.Metrics} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			ls.Close()
			t.Fatal(err)
		}
		*dst = ln
	}
	ctx, cancel := context.WithCancel(context.Background())
	tg := &testGate{
		Gate:      g,
		serving:   ls.Serving.Addr().String(),
		admin:     ls.Admin.Addr().String(),
		metrics:   ls.Metrics.Addr().String(),
		terminate: cancel,
		done:      make(chan error, 1),
		client:    &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		logs:      logs,
	}
	go func() { tg.done <- g.Serve(ctx, ls) }()
	fake, _ := opts.Clock.(*testingclock.FakeClock)
	t.Cleanup(func() {
		cancel()
		deadline := time.After(testWait)
		for waiting := true; waiting; {
			select {
			case err := <-tg.done:
				if err != nil {
					t.Errorf("Serve: %v", err)
				}
				tg.done <- err
				waiting = false
			case <-deadline:
				t.Errorf("Serve did not return after SIGTERM")
				waiting = false
			case <-time.After(5 * time.Millisecond):
				if fake != nil {
					// Time passes for a drain on a fake clock too.
					fake.Step(cfg.DrainQuietPeriod + time.Second)
				}
			}
		}
		tg.client.CloseIdleConnections()
		if t.Failed() {
			t.Logf("gate logs:\n%s", logs.String())
		}
	})
	return tg
}

// url is a URL on the serving port.
func (tg *testGate) url(path string) string { return "http://" + tg.serving + path }

// do sends a request and returns status, body and headers.
func (tg *testGate) do(t testing.TB, method, url string, body io.Reader, header http.Header) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := tg.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	return resp.StatusCode, string(b), resp.Header
}

// health is the kubelet's readiness check of the gate.
func (tg *testGate) health(t testing.TB) int {
	t.Helper()
	code, _, _ := tg.do(t, http.MethodGet, tg.url("/"), nil, http.Header{
		"User-Agent": {"kube-probe/1.37"}, contract.NetworkProbeHeader: {queueName},
	})
	return code
}

// verbose is /readyz?verbose on the admin port.
func (tg *testGate) verbose(t testing.TB) string {
	t.Helper()
	_, body, _ := tg.do(t, http.MethodGet, "http://"+tg.admin+"/readyz?verbose", nil, nil)
	return body
}

// metricsText is the /metrics page.
func (tg *testGate) metricsText(t testing.TB) string {
	t.Helper()
	_, body, _ := tg.do(t, http.MethodGet, "http://"+tg.metrics+"/metrics", nil, nil)
	return body
}

// waitReady waits until the gate answers health checks with want.
func (tg *testGate) waitReady(t testing.TB, want bool) {
	t.Helper()
	eventually(t, "the gate's readiness is "+strconv.FormatBool(want), func() bool { return tg.Ready() == want })
}

// startApp runs a test app on 127.0.0.1 until the test ends.
func startApp(t testing.TB, cfg testapp.Config) *testapp.Server {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	s, err := testapp.Start(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopApp(t, s) })
	return s
}

func stopApp(t testing.TB, s *testapp.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("testapp shutdown: %v", err)
	}
}

// gateConfig is a configuration aiming the gate at upstream (host:port)
// with no probes and an immediate drain.
func gateConfig(t testing.TB, upstream string) contract.Config {
	t.Helper()
	host, port := splitHostPort(t, upstream)
	cfg := contract.Defaults()
	cfg.UpstreamHost = host
	cfg.UserPort = port
	cfg.DrainQuietPeriod = 0
	return cfg
}

func splitHostPort(t testing.TB, addr string) (string, int) {
	t.Helper()
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return host, port
}

func portOf(t testing.TB, addr string) int {
	_, p := splitHostPort(t, addr)
	return p
}

func tcpProbe(port int, period int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(port)}},
		PeriodSeconds: period,
	}
}

func httpProbe(port int, path string, period int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt(port), Path: path}},
		PeriodSeconds: period,
	}
}

func contains(t testing.TB, what, got, want string) {
	t.Helper()
	if !strings.Contains(got, want) {
		t.Errorf("%s = %q, want it to contain %q", what, got, want)
	}
}

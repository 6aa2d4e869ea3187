package readiness

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podgate/podgate/probe"
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

// started is an Aggregator whose probes run until the test ends.
type started struct {
	*Aggregator
	logs *syncbuf.Buffer
}

// start builds an Aggregator of containers aimed at 127.0.0.1 (unless
// opts names a target), logging into a buffer shown when the test fails,
// and runs its probes until the test ends.
func start(t testing.TB, containers []Container, opts Options) started {
	t.Helper()
	logs := &syncbuf.Buffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if opts.Target.PodIP == "" {
		opts.Target = probe.Target{PodIP: "127.0.0.1"}
	}
	a := New(containers, opts)
	ctx, cancel := context.WithCancel(context.Background())
	wait := a.Start(ctx)
	t.Cleanup(func() {
		cancel()
		wait()
		if t.Failed() {
			t.Logf("aggregator logs:\n%s", logs.String())
		}
	})
	return started{Aggregator: a, logs: logs}
}

// waitReady polls until the aggregate is want.
func (s started) waitReady(t testing.TB, want bool) {
	t.Helper()
	eventually(t, "aggregate ready = "+strconv.FormatBool(want), func() bool { return s.Ready() == want })
}

// report is the named container's line of Report.
func (s started) report(t testing.TB, name string) ContainerReport {
	t.Helper()
	for _, r := range s.Report() {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no container %q in the report", name)
	return ContainerReport{}
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
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testWait)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("testapp shutdown: %v", err)
		}
	})
	return s
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

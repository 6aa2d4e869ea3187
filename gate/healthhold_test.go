package gate

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/gate/readiness"
	"github.com/podgate/podgate/test/testapp"
)

// closedPort is a loopback port nobody listens on (yet): the test may
// listen on it later.
func closedPort(t testing.TB) (addr string, port int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	_ = ln.Close()
	return addr, portOf(t, addr)
}

// healthAnswer is one health check's outcome.
type healthAnswer struct {
	code int
	body string
	err  error
	at   time.Time
}

// sendHealth sends the kubelet's health check with its own client timeout
// (0: none) and delivers the answer on the channel.
func sendHealth(tg *testGate, timeout time.Duration) <-chan healthAnswer {
	res := make(chan healthAnswer, 1)
	go func() {
		ctx := context.Background()
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tg.url("/"), nil)
		req.Header.Set("User-Agent", "kube-probe/1.37")
		req.Header.Set(contract.NetworkProbeHeader, queueName)
		resp, err := tg.client.Do(req)
		if err != nil {
			res <- healthAnswer{err: err, at: time.Now()}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		res <- healthAnswer{code: resp.StatusCode, body: string(b), err: err, at: time.Now()}
	}()
	return res
}

func waitAnswer(t *testing.T, res <-chan healthAnswer) healthAnswer {
	t.Helper()
	select {
	case a := <-res:
		if a.err != nil {
			t.Fatalf("health check: %v", a.err)
		}
		return a
	case <-time.After(testWait):
		t.Fatal("health check not answered")
		return healthAnswer{}
	}
}

func noAnswerYet(t *testing.T, res <-chan healthAnswer, when string) {
	t.Helper()
	select {
	case a := <-res:
		t.Fatalf("health check answered %s: %d %q %v", when, a.code, a.body, a.err)
	default:
	}
}

// TestHeldHealthCheckAnsweredWhenThePortOpens: with an aggressive
// readiness probe, a health check that arrives before the container is up
// waits, and is answered 200 queue once the container accepts, as
// queue-proxy's long poll. Every held check is answered.
func TestHeldHealthCheckAnsweredWhenThePortOpens(t *testing.T) {
	addr, port := closedPort(t)
	cfg := gateConfig(t, addr)
	cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(port, 0)}
	tg := startGate(t, cfg, Options{})
	var checks []<-chan healthAnswer
	for range 3 {
		checks = append(checks, sendHealth(tg, 0))
	}
	eventually(t, "three health checks are held", func() bool { return tg.HealthChecksHeld() == 3 })
	for _, c := range checks {
		noAnswerYet(t, c, "while the container's port is closed")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	opened := time.Now()
	for _, c := range checks {
		a := waitAnswer(t, c)
		if a.code != http.StatusOK || a.body != queueName {
			t.Errorf("held check answered %d %q, want 200 %q", a.code, a.body, queueName)
		}
		t.Logf("answered %v after the port opened", a.at.Sub(opened))
	}
	if n := tg.HealthChecksHeld(); n != 0 {
		t.Errorf("%d health checks still held", n)
	}
}

// TestHealthCheckHolding pins when a not-ready answer waits and how a
// held check ends other than by readiness.
func TestHealthCheckHolding(t *testing.T) {
	t.Run("a check is cut by the caller's own timeout and leaves nothing behind", func(t *testing.T) {
		_, port := closedPort(t)
		cfg := gateConfig(t, "127.0.0.1:1")
		cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(port, 0)}
		tg := startGate(t, cfg, Options{})
		res := sendHealth(tg, 200*time.Millisecond)
		a := <-res
		if !errors.Is(a.err, context.DeadlineExceeded) {
			t.Fatalf("health check: %d %q %v, want the caller's timeout", a.code, a.body, a.err)
		}
		// The gate lets go of the check when its caller does.
		eventually(t, "the held check is released", func() bool { return tg.HealthChecksHeld() == 0 })
		// Still not ready: the next check is held again.
		res = sendHealth(tg, 0)
		eventually(t, "the next check is held", func() bool { return tg.HealthChecksHeld() == 1 })
		tg.terminate()
		if a := waitAnswer(t, res); a.code != http.StatusServiceUnavailable {
			t.Errorf("check after the drain started: %d %q", a.code, a.body)
		}
	})

	t.Run("a check is answered 503 after queue-proxy's 10 s", func(t *testing.T) {
		clk := testingclock.NewFakeClock(time.Now())
		_, port := closedPort(t)
		cfg := gateConfig(t, "127.0.0.1:1")
		cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(port, 0)}
		tg := startGate(t, cfg, Options{Clock: clk})
		res := sendHealth(tg, 0)
		eventually(t, "the check is held", func() bool { return tg.HealthChecksHeld() == 1 })
		clk.Step(DefaultHealthCheckHold - time.Millisecond)
		// Give a wrongly released check the chance to show.
		time.Sleep(20 * time.Millisecond)
		noAnswerYet(t, res, "before the hold limit")
		clk.Step(time.Millisecond)
		if a := waitAnswer(t, res); a.code != http.StatusServiceUnavailable || a.body != "" {
			t.Errorf("check at the hold limit: %d %q, want 503 without body", a.code, a.body)
		}
		eventually(t, "the held check is released", func() bool { return tg.HealthChecksHeld() == 0 })
	})

	t.Run("the limit is an option", func(t *testing.T) {
		_, port := closedPort(t)
		cfg := gateConfig(t, "127.0.0.1:1")
		cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(port, 0)}
		tg := startGate(t, cfg, Options{HealthCheckHold: 50 * time.Millisecond})
		start := time.Now()
		a := waitAnswer(t, sendHealth(tg, 0))
		if a.code != http.StatusServiceUnavailable || a.at.Sub(start) < 50*time.Millisecond {
			t.Errorf("check answered %d after %v, want 503 after the 50 ms limit", a.code, a.at.Sub(start))
		}
	})

	t.Run("the drain releases a held check with 503 shutting down", func(t *testing.T) {
		_, port := closedPort(t)
		cfg := gateConfig(t, "127.0.0.1:1")
		cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(port, 0)}
		// A quiet period on a clock that stands still: the gate keeps
		// serving during the drain.
		cfg.DrainQuietPeriod = 30 * time.Second
		tg := startGate(t, cfg, Options{Clock: testingclock.NewFakeClock(time.Now())})
		res := sendHealth(tg, 0)
		eventually(t, "the check is held", func() bool { return tg.HealthChecksHeld() == 1 })
		tg.terminate()
		eventually(t, "the gate drains", tg.Drainer().Draining)
		if a := waitAnswer(t, res); a.code != http.StatusServiceUnavailable || a.body != "shutting down\n" {
			t.Errorf("held check at the drain: %d %q, want 503 shutting down", a.code, a.body)
		}
		// And a new one is not held at all.
		if a := waitAnswer(t, sendHealth(tg, 0)); a.code != http.StatusServiceUnavailable || a.body != "shutting down\n" {
			t.Errorf("check while draining: %d %q, want 503 shutting down", a.code, a.body)
		}
	})

	t.Run("without an aggressive probe a check is answered at once", func(t *testing.T) {
		_, port := closedPort(t)
		cfg := gateConfig(t, "127.0.0.1:1")
		cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(port, 1)}
		tg := startGate(t, cfg, Options{})
		if a := waitAnswer(t, sendHealth(tg, 0)); a.code != http.StatusServiceUnavailable {
			t.Errorf("check of an unready gate: %d %q, want 503", a.code, a.body)
		}
		if n := tg.HealthChecksHeld(); n != 0 {
			t.Errorf("%d checks held", n)
		}
	})

	t.Run("once the pod was ready a check is answered at once", func(t *testing.T) {
		clk := testingclock.NewFakeClock(time.Now())
		app := startApp(t, testapp.Config{})
		cfg := gateConfig(t, app.Addr())
		cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(portOf(t, app.Addr()), 0)}
		tg := startGate(t, cfg, Options{Clock: clk})
		tg.waitReady(t, true)
		// A container's preStop hook without SIGTERM: the pod is not
		// ready until the fake clock releases the hook.
		hook := preStop(tg)
		tg.waitReady(t, false)
		if a := waitAnswer(t, sendHealth(tg, 0)); a.code != http.StatusServiceUnavailable {
			t.Errorf("check of a gate that was ready: %d %q, want 503 at once", a.code, a.body)
		}
		if n := tg.HealthChecksHeld(); n != 0 {
			t.Errorf("%d checks held", n)
		}
		eventually(t, "the hook waits on the clock", clk.HasWaiters)
		clk.Step(time.Second)
		<-hook
	})
}

// TestHeldHealthCheckAnsweredAtTheStatusSourcesFirstReport: every probed
// container is ready, but a gate with a status source is not ready until
// the source first reported; the check held meanwhile is answered 200 at
// that report, not answered 503 (nor held on) because the probes were
// ready first.
func TestHeldHealthCheckAnsweredAtTheStatusSourcesFirstReport(t *testing.T) {
	app := startApp(t, testapp.Config{})
	cfg := gateConfig(t, app.Addr())
	cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(portOf(t, app.Addr()), 0)}
	cfg.ReadinessContainers = []string{"app"}
	src := newFeedSource()
	tg := startGate(t, cfg, Options{Status: src})
	eventually(t, "the serving container is probed ready", func() bool { return tg.agg.Ready() })

	res := sendHealth(tg, 0)
	eventually(t, "the check is held", func() bool { return tg.HealthChecksHeld() == 1 })
	noAnswerYet(t, res, "before the status source reported")
	select {
	case src.ch <- []readiness.ContainerStatus{{Name: "app", Ready: true, Running: true, ContainerID: "id-app"}}:
	case <-time.After(testWait):
		t.Fatal("the gate does not watch its status source")
	}
	if a := waitAnswer(t, res); a.code != http.StatusOK || a.body != queueName {
		t.Errorf("held check at the first report: %d %q, want 200 %q", a.code, a.body, queueName)
	}
}

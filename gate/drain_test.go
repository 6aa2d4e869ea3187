package gate

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/testapp"
)

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestDrainerQuietPeriod pins the drain rule on a fake clock: done once no
// request arrived for the quiet period (each arrival restarts it) and none
// is in flight.
func TestDrainerQuietPeriod(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	d := NewDrainer(clk, 30*time.Second)
	defer d.Stop()
	// settle waits until the drain's goroutine waits on the clock again.
	settle := func() { eventually(t, "the drainer waits", clk.HasWaiters) }

	d.Drain()
	settle()
	clk.Step(29 * time.Second)
	settle()
	if isClosed(d.Done()) {
		t.Fatal("done before the quiet period")
	}
	d.Arrive() // a request at 29 s: quiet until 59 s
	clk.Step(time.Second)
	settle()
	if isClosed(d.Done()) {
		t.Fatal("done 1 s after a request")
	}
	clk.Step(29 * time.Second) // 59 s: quiet, but the request is in flight
	eventually(t, "the drainer waits for the request", func() bool { return !clk.HasWaiters() })
	if isClosed(d.Done()) {
		t.Fatal("done with a request in flight")
	}
	d.Leave()
	eventually(t, "the drain completes", func() bool { return isClosed(d.Done()) })
}

func TestDrainerWithoutTrafficEndsAfterTheQuietPeriod(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	d := NewDrainer(clk, 30*time.Second)
	defer d.Stop()
	d.Arrive()
	d.Leave() // a request long before the drain does not shorten it
	clk.Step(time.Hour)
	d.Drain()
	eventually(t, "the drainer waits", clk.HasWaiters)
	clk.Step(30 * time.Second)
	eventually(t, "the drain completes", func() bool { return isClosed(d.Done()) })
}

// TestSigtermDrainsUnderLoad: on SIGTERM health checks fail at once,
// traffic keeps being served without a single error, and the gate exits
// once no request came for the quiet period.
func TestSigtermDrainsUnderLoad(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	app := startApp(t, testapp.Config{})
	cfg := gateConfig(t, app.Addr())
	cfg.DrainQuietPeriod = 30 * time.Second
	tg := startGate(t, cfg, Options{Clock: clk})
	tg.waitReady(t, true)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.Transport.(*http.Transport).CloseIdleConnections()

	l := startLoad(8, client, tg.url("/"))
	l.waitOK(t, 100)
	tg.terminate()
	eventually(t, "the gate drains", tg.Drainer().Draining)
	code, body, _ := tg.do(t, http.MethodGet, tg.url("/"), nil, http.Header{"User-Agent": {"kube-probe/1.37"}, "K-Network-Probe": {"queue"}})
	if code != http.StatusServiceUnavailable || body != "shutting down\n" {
		t.Errorf("health check while draining: %d %q, want 503 shutting down", code, body)
	}
	l.waitOK(t, 200)
	// The clock stands still: however long the load runs, it is not quiet.
	clk.Step(29 * time.Second)
	l.waitOK(t, 100)
	if isClosed(tg.Drainer().Done()) {
		t.Fatal("drained while requests keep arriving")
	}
	l.finish(t)

	select {
	case err := <-tg.done:
		t.Fatalf("Serve returned before the quiet period: %v", err)
	default:
	}
	clk.Step(30 * time.Second)
	if err := tg.served(t); err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// served waits for Serve to return after the quiet period, and gives its
// error back to the channel for the cleanup.
func (tg *testGate) served(t *testing.T) error {
	t.Helper()
	select {
	case err := <-tg.done:
		tg.done <- err
		return err
	case <-time.After(testWait):
		t.Fatal("Serve did not return after the quiet period")
		return nil
	}
}

// preStop calls /wait-for-drain as the kubelet's preStop hook does.
func preStop(tg *testGate) <-chan string {
	res := make(chan string, 1)
	go func() {
		resp, err := tg.client.Get("http://" + tg.admin + "/wait-for-drain")
		if err != nil {
			res <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		res <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()
	return res
}

func TestWaitForDrainReleasedWithoutSigterm(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	app := startApp(t, testapp.Config{})
	cfg := gateConfig(t, app.Addr())
	cfg.DrainQuietPeriod = 30 * time.Second
	tg := startGate(t, cfg, Options{Clock: clk})
	tg.waitReady(t, true)

	res := preStop(tg)
	// A container is about to be stopped: not ready meanwhile.
	tg.waitReady(t, false)
	eventually(t, "the hook waits on the clock", clk.HasWaiters)
	clk.Step(time.Second)
	select {
	case got := <-res:
		if got != "200 released: the gate is not terminating\n" {
			t.Errorf("preStop answer %q", got)
		}
	case <-time.After(testWait):
		t.Fatal("preStop hook not released 1 s without SIGTERM")
	}
	tg.waitReady(t, true)
	if tg.Drainer().Draining() {
		t.Error("draining without SIGTERM")
	}
}

func TestWaitForDrainHoldsUntilDrained(t *testing.T) {
	for _, tc := range []struct {
		name          string
		sigtermBefore bool
	}{
		{"preStop first, SIGTERM within the second", false},
		{"SIGTERM first", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Now())
			app := startApp(t, testapp.Config{})
			cfg := gateConfig(t, app.Addr())
			cfg.DrainQuietPeriod = 30 * time.Second
			tg := startGate(t, cfg, Options{Clock: clk})
			tg.waitReady(t, true)
			if tc.sigtermBefore {
				tg.terminate()
				eventually(t, "the gate drains", tg.Drainer().Draining)
			}
			res := preStop(tg)
			// The hook must be inside the gate before the clock moves, or
			// the drain can complete before its request is even read.
			eventually(t, "the preStop hook waits", func() bool { return tg.PreStopsWaiting() == 1 })
			tg.waitReady(t, false)
			if !tc.sigtermBefore {
				tg.terminate()
				// terminate only cancels Serve's context; the gate starts
				// draining on its own goroutine. The hook's 1 s timer
				// already makes the clock have waiters, so the wait below
				// would not hold the clock until then: moving it first
				// releases the hook as if no SIGTERM had come.
				eventually(t, "the gate drains", tg.Drainer().Draining)
			}
			// Traffic is still served during the drain.
			if code, _, _ := tg.do(t, http.MethodGet, tg.url("/"), nil, nil); code != http.StatusOK {
				t.Errorf("request during the drain: %d", code)
			}
			eventually(t, "the drain waits on the clock", clk.HasWaiters)
			clk.Step(5 * time.Second) // past the 1 s rule, inside the quiet period
			select {
			case got := <-res:
				t.Fatalf("preStop released during the drain: %q", got)
			default:
			}
			clk.Step(30 * time.Second)
			select {
			case got := <-res:
				if got != "200 drained\n" {
					t.Errorf("preStop answer %q, want 200 drained", got)
				}
			case <-time.After(testWait):
				t.Fatal("preStop not released after the drain")
			}
		})
	}
}

// TestSpareConnectionDoesNotFailTheDrain pins what a client's unused
// connection does at the end of a drain: net/http counts it as busy for
// its first seconds, so Shutdown waits for it to its deadline, but no
// request was cut and Serve reports a clean stop.
func TestSpareConnectionDoesNotFailTheDrain(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	app := startApp(t, testapp.Config{})
	cfg := gateConfig(t, app.Addr())
	cfg.DrainQuietPeriod = time.Second
	tg := startGate(t, cfg, Options{Clock: clk, ShutdownTimeout: 100 * time.Millisecond})
	tg.waitReady(t, true)
	spare, err := net.Dial("tcp", tg.serving)
	if err != nil {
		t.Fatal(err)
	}
	defer spare.Close()
	tg.terminate()
	eventually(t, "the gate drains", tg.Drainer().Draining)
	clk.Step(2 * time.Second)
	if err := tg.served(t); err != nil {
		t.Errorf("Serve: %v, want a clean stop: the spare connection carried no request", err)
	}
	if !strings.Contains(tg.logs.String(), "closed connections still open after the drain") {
		t.Errorf("no log line about the connection closed after the drain:\n%s", tg.logs.String())
	}
}

package gate

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/test/testapp"
)

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
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

func TestUnroutedIsBelievedOnlyFromTheOnlyRouter(t *testing.T) {
	for _, tc := range []struct {
		name       string
		onlyRouter string
		pod        string
		method     string
		wantCode   int
		wantBody   string
		wantEarly  bool
	}{
		{"the only router's confirmation ends the drain", "activator", "web-1", http.MethodPost, 200, "ok", true},
		{"without PODGATE_ONLY_ROUTER it is ignored", "", "web-1", http.MethodPost, 409, "PODGATE_ONLY_ROUTER is not set", false},
		{"a confirmation for another pod (a reused IP) is ignored", "activator", "web-0", http.MethodPost, 409, `this is the gate of pod "web-1", not "web-0"`, false},
		{"GET is not a confirmation", "activator", "web-1", http.MethodGet, 405, "POST only", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Now())
			app := startApp(t, testapp.Config{})
			cfg := gateConfig(t, app.Addr())
			cfg.DrainQuietPeriod = time.Hour
			cfg.Pod, cfg.OnlyRouter = "web-1", tc.onlyRouter
			tg := startGate(t, cfg, Options{Clock: clk})
			tg.waitReady(t, true)
			res := preStop(tg)
			eventually(t, "the preStop hook waits", func() bool { return tg.PreStopsWaiting() == 1 })
			tg.terminate()
			eventually(t, "the gate drains", tg.Drainer().Draining)
			code, body, _ := tg.do(t, tc.method, "http://"+tg.admin+"/unrouted?pod="+tc.pod, nil, nil)
			if code != tc.wantCode || !strings.Contains(body, tc.wantBody) {
				t.Errorf("answer %d %q, want %d containing %q", code, body, tc.wantCode, tc.wantBody)
			}
			if !tc.wantEarly {
				eventually(t, "the drain waits on the clock", clk.HasWaiters)
				select {
				case got := <-res:
					t.Fatalf("preStop released before the quiet period: %q", got)
				default:
				}
				return // the cleanup steps the clock past the quiet period
			}
			select {
			case got := <-res:
				if got != "200 drained\n" {
					t.Errorf("preStop answer %q, want 200 drained", got)
				}
			case <-time.After(testWait):
				t.Fatal("preStop not released after the confirmation")
			}
			if err := tg.served(t); err != nil {
				t.Errorf("Serve: %v", err)
			}
			contains(t, "logs", tg.logs.String(), "drained: the activator, this pod's only router, no longer routes here")
		})
	}
}

// TestStartDrainIsTheDeletionNotTheExit: the gate's own preStop hook (how
// a native sidecar learns of the deletion on a cluster), together with a
// container's preStop hook (the kubelet runs them together), starts the
// drain and holds the other containers' hooks, but the gate keeps serving
// until its SIGTERM, which then ends it at once.
func TestStartDrainIsTheDeletionNotTheExit(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	app := startApp(t, testapp.Config{})
	cfg := gateConfig(t, app.Addr())
	cfg.DrainQuietPeriod = 30 * time.Second
	tg := startGate(t, cfg, Options{Clock: clk})
	tg.waitReady(t, true)
	res := preStop(tg)
	eventually(t, "the preStop hook waits", func() bool { return tg.PreStopsWaiting() == 1 })
	code, body, _ := tg.do(t, http.MethodGet, "http://"+tg.admin+"/start-drain", nil, nil)
	if code != http.StatusOK || body != "draining\n" {
		t.Fatalf("/start-drain: %d %q", code, body)
	}
	if !tg.Drainer().Draining() || tg.Ready() {
		t.Fatal("not draining, or still ready, after the gate's preStop hook")
	}
	clk.Step(5 * time.Second) // the 1 s rule does not apply: the deletion is known
	select {
	case got := <-res:
		t.Fatalf("preStop released during the drain: %q", got)
	default:
	}
	clk.Step(30 * time.Second)
	if got := <-res; got != "200 drained\n" {
		t.Errorf("preStop answer %q, want 200 drained", got)
	}
	// Drained, but no SIGTERM yet: still serving.
	if code, _, _ := tg.do(t, http.MethodGet, tg.url("/"), nil, nil); code != http.StatusOK {
		t.Errorf("request after the drain, before SIGTERM: %d", code)
	}
	select {
	case err := <-tg.done:
		t.Fatalf("Serve returned before SIGTERM: %v", err)
	default:
	}
	tg.terminate()
	if err := tg.served(t); err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestStartDrainAloneIsARestartNotADrain: the gate's preStop hook with
// nothing confirming a deletion within a second (no SIGTERM, no status
// source, no other container's hook) is the gate's own restart, as
// queue-proxy reads a lone /wait-for-drain: not ready for that second,
// then released, and nothing lasting changed.
func TestStartDrainAloneIsARestartNotADrain(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	app := startApp(t, testapp.Config{})
	cfg := gateConfig(t, app.Addr())
	tg := startGate(t, cfg, Options{Clock: clk})
	tg.waitReady(t, true)
	res := make(chan string, 1)
	go func() {
		resp, err := tg.client.Get("http://" + tg.admin + "/start-drain")
		if err != nil {
			res <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		res <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()
	tg.waitReady(t, false)
	if tg.Drainer().Draining() {
		t.Fatal("draining on the gate's preStop hook alone")
	}
	eventually(t, "the hook waits on the clock", clk.HasWaiters)
	clk.Step(preStopRelease)
	if got := <-res; got != "200 released: nothing confirmed the pod's deletion; not draining\n" {
		t.Errorf("/start-drain answer %q", got)
	}
	tg.waitReady(t, true)
	if code := tg.health(t); code != http.StatusOK {
		t.Errorf("health check after the release: %d, want 200", code)
	}
}

func TestLivezAnswersWhileServingReadyOrNot(t *testing.T) {
	app := startApp(t, testapp.Config{})
	cfg := gateConfig(t, app.Addr())
	cfg.ReadinessProbes = []*corev1.Probe{httpProbe(portOf(t, app.Addr()), "/readyz", 1)}
	tg := startGate(t, cfg, Options{})
	app.SetReady(false)
	tg.waitReady(t, false)
	if code, body, _ := tg.do(t, http.MethodGet, "http://"+tg.admin+"/livez", nil, nil); code != 200 || body != "ok\n" {
		t.Errorf("/livez of an unready gate: %d %q, want 200 ok", code, body)
	}
}

// TestDrainReportsItsProgress: a drain in progress says every few seconds
// how much of the quiet period is left (the gate's countdown, instead of
// a readiness failure a second), and says how it ended.
func TestDrainReportsItsProgress(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	app := startApp(t, testapp.Config{})
	cfg := gateConfig(t, app.Addr())
	cfg.DrainQuietPeriod = 30 * time.Second
	tg := startGate(t, cfg, Options{Clock: clk})
	tg.waitReady(t, true)
	tg.terminate()
	eventually(t, "the gate drains", tg.Drainer().Draining)
	for i, want := range []string{"quietLeft=25s", "quietLeft=20s"} {
		eventually(t, "the drain waits on the clock", clk.HasWaiters)
		clk.Step(drainReportEvery)
		eventually(t, fmt.Sprintf("progress report %d", i+1), func() bool {
			return strings.Contains(tg.logs.String(), "msg=draining "+want+" inFlight=0")
		})
	}
	clk.Step(20 * time.Second)
	if err := tg.served(t); err != nil {
		t.Errorf("Serve: %v", err)
	}
	contains(t, "logs", tg.logs.String(), `msg="drained: no request for the quiet period and none in flight"`)
}

// A keep-alive client of a draining gate is told to dial again: a router
// behind a Service's ClusterIP would otherwise keep its connections to
// the terminating pod (conntrack pins them) and the quiet period would
// never pass while the load runs.
func TestDrainingClosesKeepAliveConnectionsAfterEachAnswer(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	app := startApp(t, testapp.Config{})
	cfg := gateConfig(t, app.Addr())
	cfg.DrainQuietPeriod = 30 * time.Second
	tg := startGate(t, cfg, Options{Clock: clk})
	tg.waitReady(t, true)

	dials := 0
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials++
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	get := func() *http.Response {
		t.Helper()
		resp, err := client.Get(tg.url("/"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for range 3 {
		if resp := get(); resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("before the drain: %d, close %t; want 200 on a kept connection", resp.StatusCode, resp.Close)
		}
	}
	if dials != 1 {
		t.Fatalf("%d dials for 3 requests before the drain, want 1", dials)
	}
	tg.terminate()
	eventually(t, "the gate drains", tg.Drainer().Draining)
	before := dials
	for range 3 {
		if resp := get(); resp.StatusCode != http.StatusOK || !resp.Close {
			t.Fatalf("while draining: %d, close %t; want 200 and Connection: close", resp.StatusCode, resp.Close)
		}
	}
	// The first went on the connection kept from before; each answer
	// closed its connection, so the next two dialled.
	if dials-before != 2 {
		t.Errorf("%d dials for 3 requests while draining, want 2 (each answer closes its connection)", dials-before)
	}
	clk.Step(30 * time.Second)
	if err := tg.served(t); err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestUnroutedIfDrainingCountsOnlyDuringTheDrain: the confirmation of a
// router that stops (?if=draining) is refused by a gate that is not
// draining — its pod outlives the router, whose successor routes here —
// so a later deletion waits out the quiet period; during the drain it
// ends the drain as a plain confirmation does.
func TestUnroutedIfDrainingCountsOnlyDuringTheDrain(t *testing.T) {
	for _, draining := range []bool{false, true} {
		t.Run(fmt.Sprintf("draining=%v", draining), func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Now())
			app := startApp(t, testapp.Config{})
			cfg := gateConfig(t, app.Addr())
			cfg.DrainQuietPeriod = time.Hour
			cfg.Pod, cfg.OnlyRouter = "web-1", "activator"
			tg := startGate(t, cfg, Options{Clock: clk})
			tg.waitReady(t, true)
			res := preStop(tg)
			eventually(t, "the preStop hook waits", func() bool { return tg.PreStopsWaiting() == 1 })
			if draining {
				tg.terminate()
				eventually(t, "the gate drains", tg.Drainer().Draining)
			}
			code, body, _ := tg.do(t, http.MethodPost, "http://"+tg.admin+"/unrouted?pod=web-1&if=draining", nil, nil)
			if !draining {
				if code != http.StatusConflict || !strings.Contains(body, "not draining") {
					t.Errorf("answer %d %q before the drain, want 409 not draining", code, body)
				}
				tg.terminate()
				eventually(t, "the gate drains", tg.Drainer().Draining)
				eventually(t, "the drain waits on the clock", clk.HasWaiters)
				select {
				case got := <-res:
					t.Fatalf("preStop released before the quiet period: %q", got)
				default:
				}
				return // the cleanup steps the clock past the quiet period
			}
			if code != http.StatusOK {
				t.Errorf("answer %d %q during the drain, want 200", code, body)
			}
			select {
			case got := <-res:
				if got != "200 drained\n" {
					t.Errorf("preStop answer %q, want 200 drained", got)
				}
			case <-time.After(testWait):
				t.Fatal("preStop not released after the confirmation")
			}
		})
	}
}

package podapi

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/gate"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/local/apiserver"
	"github.com/podgate/podgate/local/objstore"
	"github.com/podgate/podgate/test/syncbuf"
	"github.com/podgate/podgate/test/testapp"
)

// patchCounter counts the PATCHes of one pod's status that reach the
// control API, with the time (on the test's clock) each arrived.
type patchCounter struct {
	next  http.Handler
	path  string
	clock clock.PassiveClock
	mu    sync.Mutex
	at    []time.Time
}

func (c *patchCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPatch && r.URL.Path == c.path {
		c.mu.Lock()
		c.at = append(c.at, c.clock.Now())
		c.mu.Unlock()
	}
	c.next.ServeHTTP(w, r)
}

func (c *patchCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.at)
}

// startCountingAPI is startAPI with the PATCHes of pod default/web-1's
// status counted on their way in.
func startCountingAPI(t *testing.T, clk clock.PassiveClock) (*objstore.Store, string, *patchCounter) {
	t.Helper()
	st := objstore.New(objstore.Options{})
	counter := &patchCounter{next: apiserver.NewServer(apiserver.Config{Store: st}), path: "/api/v1/namespaces/default/pods/web-1/status", clock: clk}
	ln, err := apiserver.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base, stopStreams := context.WithCancel(context.Background())
	srv := &http.Server{Handler: counter, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return base }}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		stopStreams() // the gate's watch
		if err := srv.Close(); err != nil {
			t.Errorf("close the control API: %v", err)
		}
		<-served
	})
	return st, "http://" + ln.Addr().String(), counter
}

// gateCondition is the gate's condition on the stored pod, or nil.
func gateCondition(t *testing.T, st *objstore.Store) *corev1.PodCondition {
	t.Helper()
	p, err := st.Pods.Get("default", "web-1")
	if err != nil {
		return nil
	}
	for _, c := range p.Status.Conditions {
		if c.Type == contract.ContainersReadyCondition {
			return &c
		}
	}
	return nil
}

// runGate serves g on fresh loopback listeners; stop is its SIGTERM,
// returning Serve's error once it returned.
func runGate(t *testing.T, g *gate.Gate) (gate.Listeners, func() error) {
	t.Helper()
	var ls gate.Listeners
	for _, dst := range []*net.Listener{&ls.Serving, &ls.Admin, &ls.Metrics} {
		var err error
		if *dst, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			ls.Close()
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, ls) }()
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(testWait):
				t.Fatal("Serve did not return after SIGTERM")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return ls, stop
}

func startApp(t *testing.T) (host string, port int, addr string) {
	t.Helper()
	app, err := testapp.Start(testapp.Config{Addr: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Shutdown(context.Background()) })
	h, p, _ := net.SplitHostPort(app.Addr())
	port, _ = strconv.Atoi(p)
	return h, port, app.Addr()
}

func toggleReady(t *testing.T, addr string, ready bool) {
	t.Helper()
	resp, err := http.Post("http://"+addr+"/toggleReady?set="+strconv.FormatBool(ready), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// TestGateWritesItsConditionOnItsPod runs a real gate, with the writer on
// client-go, against a real control API: the condition follows the
// sidecar's readiness probe, names it with its probe message when it
// fails, leaves the node agent's conditions alone, is not written again
// while nothing changes, and reads Draining once the pod is deleted —
// written before the gate exits.
func TestGateWritesItsConditionOnItsPod(t *testing.T) {
	st, url, patches := startCountingAPI(t, clock.RealClock{})
	agents := []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ReadinessGatesNotReady"},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
	}
	p := pod(running("web", true, 0), running("side", true, 0))
	p.Status.Conditions = agents
	if _, err := st.Pods.Create(p); err != nil {
		t.Fatal(err)
	}
	host, port, _ := startApp(t)
	_, sidePort, sideAddr := startApp(t)

	cfg := contract.Defaults()
	cfg.UpstreamHost, cfg.UserPort, cfg.DrainQuietPeriod = host, port, 0
	cfg.Namespace, cfg.Pod = "default", "web-1"
	httpProbe := func(port int) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt(port)}},
			PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1, TimeoutSeconds: 1,
		}
	}
	cfg.ReadinessProbes = []*corev1.Probe{httpProbe(port), httpProbe(sidePort)}
	cfg.ReadinessContainers = []string{"web", "side"}
	cfg.Containers = []string{"web", "side"}
	w, err := ConditionWriterForURL(url, cfg.Namespace, cfg.Pod)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	g, err := gate.New(gate.Options{Config: cfg, Conditions: w, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	_, stop := runGate(t, g)

	waitCondition := func(what string, ok func(c *corev1.PodCondition) bool) *corev1.PodCondition {
		t.Helper()
		var c *corev1.PodCondition
		eventually(t, what, func() bool { c = gateCondition(t, st); return c != nil && ok(c) })
		return c
	}
	c := waitCondition("the condition is True", func(c *corev1.PodCondition) bool { return c.Status == corev1.ConditionTrue })
	if c.Reason != "" || c.Message != "" || c.LastTransitionTime.IsZero() {
		t.Errorf("True condition %+v, want no reason or message and a transition time", c)
	}
	// From here on every change is one write.
	first := patches.count()

	toggleReady(t, sideAddr, false)
	const want = "containers not ready: side (readiness probe failed: HTTP probe failed with statuscode: 503)"
	c = waitCondition("the condition names the sidecar", func(c *corev1.PodCondition) bool { return c.Status == corev1.ConditionFalse })
	if c.Reason != contract.ReasonContainersNotReady || c.Message != want {
		t.Errorf("condition %s %q, want %s %q", c.Reason, c.Message, contract.ReasonContainersNotReady, want)
	}
	// The node agent's conditions were not touched by the gate's patches.
	stored, _ := st.Pods.Get("default", "web-1")
	for _, a := range agents {
		found := false
		for _, c := range stored.Status.Conditions {
			found = found || (c.Type == a.Type && c.Status == a.Status && c.Reason == a.Reason)
		}
		if !found {
			t.Errorf("the agent's %s condition changed: %+v", a.Type, stored.Status.Conditions)
		}
	}

	// Nothing changes for three more probes of the sidecar: no write.
	before, attempts := patches.count(), g.Aggregator().Report()[1].Attempts
	eventually(t, "three more probes of the failing sidecar", func() bool { return g.Aggregator().Report()[1].Attempts >= attempts+3 })
	if n := patches.count() - before; n != 0 {
		t.Errorf("%d patch(es) of the pod's status while nothing changed, want none", n)
	}

	toggleReady(t, sideAddr, true)
	c = waitCondition("the condition is True again", func(c *corev1.PodCondition) bool { return c.Status == corev1.ConditionTrue })
	if c.Reason != "" || c.Message != "" {
		t.Errorf("True again, yet reason %q and message %q stayed", c.Reason, c.Message)
	}
	// The store has a write before its answer reaches the gate, which
	// logs it then.
	eventually(t, "the write of True is logged", func() bool { return strings.Count(logs.String(), "pod condition written") == patches.count() })

	// SIGTERM with a quiet period of 0: the drain ends at once, and the
	// condition says Draining by the time Serve returned.
	if err := stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if c := gateCondition(t, st); c == nil || c.Status != corev1.ConditionFalse || c.Reason != contract.ReasonDraining {
		t.Errorf("condition after the gate stopped: %+v, want False %s", c, contract.ReasonDraining)
	}
	// One write per change (False, True, Draining), each logged.
	if n := patches.count() - first; n != 3 {
		t.Errorf("%d patches for three changes", n)
	}
	if n := strings.Count(logs.String(), "pod condition written"); n != patches.count() {
		t.Errorf("%d writes logged, %d patches sent:\n%s", n, patches.count(), logs.String())
	}
}

// TestConditionWritesBackOffAndTheLastValueWins: a write the API refuses
// (the pod does not exist yet) is retried after 100 ms, then twice as
// long each time up to 30 s, logged once; meanwhile the value changed, and
// the write that succeeds carries the last one only.
func TestConditionWritesBackOffAndTheLastValueWins(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	st, url, patches := startCountingAPI(t, clk)
	host, port, _ := startApp(t)
	cfg := contract.Defaults()
	cfg.UpstreamHost, cfg.UserPort, cfg.DrainQuietPeriod = host, port, 0
	cfg.Namespace, cfg.Pod = "default", "web-1"
	cfg.Containers = []string{"web"} // no probe: ready at once, no probe timers on the clock
	w, err := ConditionWriterForURL(url, cfg.Namespace, cfg.Pod)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	g, err := gate.New(gate.Options{Config: cfg, Conditions: w, Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ls, _ := runGate(t, g)

	// The first attempt goes out at once; then the pauses double.
	eventually(t, "the first attempt", func() bool { return patches.count() == 1 })
	pauses := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond, 12800 * time.Millisecond,
		25600 * time.Millisecond, 30 * time.Second, 30 * time.Second}
	for i, pause := range pauses {
		eventually(t, "the writer waits to retry", clk.HasWaiters)
		clk.Step(pause - time.Millisecond)
		if !clk.HasWaiters() || patches.count() != i+1 {
			t.Fatalf("retry %d came before its pause of %s", i+1, pause)
		}
		clk.Step(time.Millisecond)
		eventually(t, "retry "+strconv.Itoa(i+1), func() bool { return patches.count() == i+2 })
	}
	if n := strings.Count(logs.String(), "could not write the pod condition"); n != 1 {
		t.Errorf("%d failures logged, want 1 (the same error each time):\n%s", n, logs.String())
	}

	// The value changes while the writer waits: the drain starts.
	// The gate's and a container's preStop hooks together: the deletion.
	hook := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + ls.Admin.Addr().String() + contract.DrainPath)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		hook <- err
	}()
	t.Cleanup(func() { <-hook })
	resp, err := http.Post("http://"+ls.Admin.Addr().String()+contract.StartDrainPath, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// Both hooks in before the clock moves: a container's hook alone
	// reads as that container's restart, and stepping the clock past the
	// 1 s in which the gate's own hook must follow would make it one (a
	// loaded machine delivered the hooks late and failed this test).
	// With no quiet period the hook returns once the gate knows of the
	// deletion; alone, it would wait for the clock.
	select {
	case err := <-hook:
		hook <- err // for the cleanup
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the container's preStop hook did not return: the gate took it for a restart")
	}
	if !g.Drainer().Draining() {
		t.Fatal("the gate does not drain after both preStop hooks")
	}
	if _, err := st.Pods.Create(pod(running("web", true, 0))); err != nil {
		t.Fatal(err)
	}
	sent := patches.count()
	// The drain's change reaches the writer in its own time: it may arm
	// its wait again after a step, so step each time it waits.
	eventually(t, "the write that succeeds", func() bool {
		if gateCondition(t, st) != nil {
			return true
		}
		if clk.HasWaiters() {
			clk.Step(30 * time.Second)
		}
		return false
	})
	if c := gateCondition(t, st); c.Status != corev1.ConditionFalse || c.Reason != contract.ReasonDraining {
		t.Errorf("written %+v, want the last value: False %s", c, contract.ReasonDraining)
	}
	if n := patches.count() - sent; n != 1 {
		t.Errorf("%d patches after the pod appeared, want 1 (True was never written)", n)
	}
	eventually(t, "the successful write is logged with the attempts that failed", func() bool {
		return strings.Contains(logs.String(), "afterFailedAttempts=12")
	})
}

// TestConditionPatchTouchesOneConditionAndClearsWhatItLeavesOut pins the
// patch: one condition, of the gate's type; empty fields sent as null so
// the merge removes them.
func TestConditionPatchTouchesOneConditionAndClearsWhatItLeavesOut(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		c    gate.PodCondition
		want string
	}{
		{"True clears reason and message", gate.PodCondition{Ready: true, LastTransition: at},
			`{"status":{"conditions":[{"lastTransitionTime":"2026-01-02T03:04:05Z","message":null,"reason":null,"status":"True","type":"podgate.dev/containers-ready"}]}}`},
		{"False carries them", gate.PodCondition{Reason: "ContainersNotReady", Message: "containers not ready: side (x)", LastTransition: at},
			`{"status":{"conditions":[{"lastTransitionTime":"2026-01-02T03:04:05Z","message":"containers not ready: side (x)","reason":"ContainersNotReady","status":"False","type":"podgate.dev/containers-ready"}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ConditionPatch(tc.c)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("patch\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	if _, err := ConditionWriterForURL("http://127.0.0.1:9700", "default", ""); err == nil {
		t.Error("no error without a pod name")
	}
}

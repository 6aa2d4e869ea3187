package gatestatus

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/rest"

	"github.com/podgate/podgate/gate"
	"github.com/podgate/podgate/gate/podapi"
)

// TestAGateThatNeverConnectsLeavesGateNotConnectedAfterTheGrace: an
// injected pod whose gate container runs for longer than --gate-grace
// without a request from the pod gets GateNotConnected, once; a pod
// whose gate connected, a pod within the grace, a pod without a gate and
// a pod whose gate reads the API server itself (an older injection's
// PODGATE_STATUS_SOURCE=kubernetes) get none. The grace is a timing rule: the service's clock is fake.
func TestAGateThatNeverConnectsLeavesGateNotConnectedAfterTheGrace(t *testing.T) {
	h := startService(t, func(o *Options, _ *rest.Config) { o.GateGrace = 30 * time.Second; o.CheckInterval = time.Second })
	start := h.clk.Now()
	silent := h.createPod("silent", podIP(), podOpts{gateStarted: start})
	talkingIP := podIP()
	talking := h.createPod("talking", talkingIP, podOpts{gateStarted: start})
	late := h.createPod("late", podIP(), podOpts{gateStarted: start.Add(20 * time.Second)})
	plain := h.createPod("plain", podIP(), podOpts{noGate: true})
	direct := h.createPod("direct", podIP(), podOpts{gateStarted: start, statusSource: "kubernetes"})

	src, err := podapi.ForConfig(h.gateConfig(talkingIP), "default", "talking")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.WatchPod(ctx, func(gate.PodStatus) {}) }()
	t.Cleanup(func() { cancel(); <-done })
	eventually(t, "the talking gate watches", func() bool { return testutil.ToFloat64(h.svc.metrics.watchesOpen) == 1 })

	// Within the grace: nothing.
	h.stepChecks(t, 30*time.Second)
	if v := testutil.ToFloat64(h.svc.metrics.events.WithLabelValues(eventNotConnected)); v != 0 {
		t.Fatalf("%v GateNotConnected within the grace, want none", v)
	}
	// Past it for the silent pod only (late started 20 s after).
	h.stepChecks(t, time.Second)
	eventually(t, "GateNotConnected on the silent pod", func() bool { return len(h.events(silent, eventNotConnected)) == 1 })
	ev := h.events(silent, eventNotConnected)[0]
	if !strings.Contains(ev.Message, `has been running for 31s`) || !strings.Contains(ev.Message, "http://$(PODGATE_HOST_IP):9026") {
		t.Errorf("message %q, want how long it ran and what the status source should be", ev.Message)
	}
	// Later checks write no second Event, and the late pod gets its own.
	h.stepChecks(t, 20*time.Second)
	eventually(t, "GateNotConnected on the late pod", func() bool { return len(h.events(late, eventNotConnected)) == 1 })
	h.stepChecks(t, 10*time.Minute)
	h.svc.events.running.Wait() // the writes asked for so far
	for _, p := range []struct {
		name string
		n    int
	}{{"silent", len(h.events(silent, eventNotConnected))}, {"talking", len(h.events(talking, eventNotConnected))}, {"late", len(h.events(late, eventNotConnected))}, {"plain", len(h.events(plain, eventNotConnected))}, {"direct", len(h.events(direct, eventNotConnected))}} {
		want := 1
		if p.name == "talking" || p.name == "plain" || p.name == "direct" {
			want = 0
		}
		if p.n != want {
			t.Errorf("pod %s has %d GateNotConnected Events, want %d", p.name, p.n, want)
		}
	}
}

// stepChecks moves the fake clock by d and waits until the check that
// the step woke has run (the loop waits on its ticker again).
func (h *harness) stepChecks(t *testing.T, d time.Duration) {
	t.Helper()
	eventually(t, "the check loop waits", h.clk.HasWaiters)
	before := h.svc.checks.Load()
	h.clk.Step(d)
	eventually(t, "the check ran", func() bool { return h.svc.checks.Load() > before })
}

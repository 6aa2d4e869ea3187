package prober

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestInitialStates(t *testing.T) {
	h := newHarness(t, allThree())
	for _, tc := range []struct {
		kind Kind
		want State
	}{{Readiness, Failure}, {Liveness, Success}, {Startup, Unknown}} {
		if s, ok := h.m.State(app, tc.kind); !ok || s != tc.want {
			t.Errorf("initial %v = %v (ok %t), want %v", tc.kind, s, ok, tc.want)
		}
	}
	if _, ok := h.m.State("other", Readiness); ok {
		t.Error("State of a container without probes reported ok")
	}
	if _, ok := h.m.State(app, Kind(9)); ok {
		t.Error("State of an invalid kind reported ok")
	}
	// The first container starts from these values: nothing to publish.
	h.start(app, "c1")
	wantUpdates(t, h)
}

func TestContainerReplacedResetsToInitialStates(t *testing.T) {
	h := newHarness(t, []spec{
		startup(every10s),
		readiness(every10s),
		liveness(corev1.Probe{PeriodSeconds: 10, FailureThreshold: 1}),
	})
	h.start(app, "c1")
	h.answer(appStart, success)
	h.answer(appReady, success)
	h.step(10 * time.Second)
	h.answer(appReady, success)
	h.answer(appLive, failure)
	h.take()
	// A restart the Manager was not told about as a stop: the new ID alone
	// resets everything.
	h.start(app, "c2")
	wantUpdates(t, h,
		"app/Startup Success->Unknown by ContainerReplaced started=false ready=false",
		"app/Readiness Success->Failure by ContainerReplaced started=false ready=false",
		"app/Liveness Failure->Success by ContainerReplaced started=false ready=false")
	if got := h.running(); got != "app/Startup" {
		t.Fatalf("running %q for the new container, want app/Startup", got)
	}
	// The same ID again changes nothing.
	h.start(app, "c2")
	wantUpdates(t, h)
	if n := h.attempts(appStart); n != 2 {
		t.Fatalf("startup attempts %d, want 2", n)
	}
}

func TestContainerStoppedIdlesWorkers(t *testing.T) {
	h := newHarness(t, []spec{readiness(every10s), liveness(every10s)})
	h.start(app, "c1")
	h.answer(appReady, success)
	h.answer(appLive, success)
	h.take()
	h.m.ContainerStopped(app, "old-id") // a stale report changes nothing
	wantUpdates(t, h)
	h.m.ContainerStopped(app, "c1")
	wantUpdates(t, h, "app/Readiness Success->Failure by ContainerStopped started=false ready=false")
	if s, _ := h.m.State(app, Liveness); s != Success {
		t.Fatalf("liveness %v after the container stopped, want Success (a Failure would read as a kill)", s)
	}
	for range 3 {
		h.step(10 * time.Second)
		if got := h.running(); got != "" {
			t.Fatalf("running %q while the container is stopped", got)
		}
	}
}

func TestResultOfReplacedContainerIsDropped(t *testing.T) {
	h := newHarness(t, []spec{readiness(every10s)})
	h.start(app, "c1")
	old := h.expect(appReady)
	h.step(3 * time.Second)
	h.start(app, "c2")
	// The old attempt's context ends; whatever it returns does not count.
	select {
	case <-old.ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("attempt on the replaced container was not cancelled")
	}
	<-old.returned
	c := h.expect(appReady)
	if c == old || c.at != 3*time.Second {
		t.Fatalf("new container probed at %v (same call %t), want a new attempt at 3s", c.at, c == old)
	}
	wantUpdates(t, h)
	h.answer(appReady, success)
	wantUpdates(t, h, "app/Readiness Failure->Success by Probe started=true ready=true")
}

func TestResultArrivingAfterStopIsDropped(t *testing.T) {
	h := newHarness(t, []spec{readiness(every10s)})
	h.start(app, "c1")
	c := h.expect(appReady)
	h.m.ContainerStopped(app, "c1")
	<-c.returned
	wantUpdates(t, h)
	if s, _ := h.m.State(app, Readiness); s != Failure {
		t.Fatalf("readiness %v, want Failure", s)
	}
}

func TestPodTerminating(t *testing.T) {
	t.Run("liveness and startup report Success and stop, readiness keeps probing", func(t *testing.T) {
		h := newHarness(t, allThree())
		h.start(app, "c1")
		inflight := h.expect(appStart)
		h.m.PodTerminating()
		<-inflight.returned
		if inflight.ctx.Err() == nil {
			t.Fatal("in-flight startup attempt not cancelled")
		}
		// As in the kubelet, startup Success makes the container Started, so
		// readiness begins now.
		wantUpdates(t, h, "app/Startup Unknown->Success by PodTerminating started=true ready=false")
		if got := h.running(); got != "app/Readiness" {
			t.Fatalf("running %q after termination began, want app/Readiness", got)
		}
		h.answer(appReady, success)
		for range 3 {
			h.step(10 * time.Second)
			if got := h.running(); got != "app/Readiness" {
				t.Fatalf("running %q at %v while terminating, want readiness only", got, h.clk.Since(t0))
			}
			h.answer(appReady, failure)
		}
		if n := h.attempts(appLive); n != 0 {
			t.Fatalf("liveness probed %d times while terminating", n)
		}
		wantUpdates(t, h,
			"app/Readiness Failure->Success by Probe started=true ready=true",
			"app/Readiness AttemptFailed started=true ready=true",
			"app/Readiness AttemptFailed started=true ready=true",
			"app/Readiness AttemptFailed started=true ready=true",
			"app/Readiness Success->Failure by Probe started=true ready=false")
	})
	t.Run("a liveness failure already on hold stays", func(t *testing.T) {
		h := newHarness(t, []spec{liveness(corev1.Probe{PeriodSeconds: 10, FailureThreshold: 1})})
		h.start(app, "c1")
		h.answer(appLive, failure)
		h.take()
		h.m.PodTerminating()
		wantUpdates(t, h)
		if s, _ := h.m.State(app, Liveness); s != Failure {
			t.Fatalf("liveness %v, want Failure kept", s)
		}
		if h.m.Ready(app) {
			t.Fatal("Ready while the kill is pending")
		}
	})
	t.Run("an in-flight liveness attempt is cancelled and dropped", func(t *testing.T) {
		h := newHarness(t, []spec{liveness(corev1.Probe{PeriodSeconds: 10, FailureThreshold: 1})})
		h.start(app, "c1")
		c := h.expect(appLive)
		h.m.PodTerminating()
		<-c.returned
		if c.ctx.Err() == nil {
			t.Fatal("in-flight liveness attempt not cancelled")
		}
		wantUpdates(t, h)
		h.step(time.Minute)
		if got := h.running(); got != "" {
			t.Fatalf("running %q after termination", got)
		}
	})
}

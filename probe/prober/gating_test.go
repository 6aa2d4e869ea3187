package prober

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func allThree() []spec {
	return []spec{
		startup(corev1.Probe{PeriodSeconds: 10, FailureThreshold: 3}),
		readiness(every10s),
		liveness(every10s),
	}
}

func TestStartupGatesReadinessAndLiveness(t *testing.T) {
	h := newHarness(t, allThree())
	h.start(app, "c1")
	if got := h.running(); got != "app/Startup" {
		t.Fatalf("running %q before Started, want only app/Startup", got)
	}
	h.answer(appStart, failure)
	h.step(10 * time.Second)
	if got := h.running(); got != "app/Startup" {
		t.Fatalf("running %q at 10s before Started, want only app/Startup", got)
	}
	if h.m.Started(app) || h.m.Ready(app) {
		t.Fatalf("Started=%t Ready=%t before the startup probe succeeded", h.m.Started(app), h.m.Ready(app))
	}
	h.answer(appStart, success)
	wantUpdates(t, h,
		"app/Startup AttemptFailed started=false ready=false",
		"app/Startup Unknown->Success by Probe started=true ready=false")
	// Started is a status change: readiness runs at once; liveness waits
	// for its tick.
	if got := h.running(); got != "app/Readiness" {
		t.Fatalf("running %q right after Started, want app/Readiness", got)
	}
	h.answer(appReady, success)
	wantUpdates(t, h, "app/Readiness Failure->Success by Probe started=true ready=true")
	if !h.m.Started(app) || !h.m.Ready(app) {
		t.Fatalf("Started=%t Ready=%t after startup and readiness succeeded", h.m.Started(app), h.m.Ready(app))
	}
	// Once Started the startup worker idles.
	for range 3 {
		h.step(10 * time.Second)
		if got := h.running(); got != "app/Liveness,app/Readiness" {
			t.Fatalf("running %q at %v, want liveness and readiness only", got, h.clk.Since(t0))
		}
		h.answer(appReady, success)
		h.answer(appLive, success)
	}
	if n := h.attempts(appStart); n != 2 {
		t.Fatalf("startup probed %d times, want 2", n)
	}
}

func TestReadyAndStarted(t *testing.T) {
	type check struct{ started, ready bool }
	for _, tc := range []struct {
		name  string
		specs []spec
		// steps run in order; after each, Started and Ready are checked
		steps []func(h *harness)
		want  []check
	}{
		{
			name: "no probes: ready once running", specs: nil,
			steps: []func(*harness){
				func(h *harness) {},
				func(h *harness) { h.start(app, "c1") },
				func(h *harness) { h.m.ContainerStopped(app, "c1") },
			},
			want: []check{{false, false}, {true, true}, {false, false}},
		},
		{
			name: "readiness only: ready after its success, not after the container stops", specs: []spec{readiness(every10s)},
			steps: []func(*harness){
				func(h *harness) { h.start(app, "c1") },
				func(h *harness) { h.answer(appReady, success) },
				func(h *harness) { h.m.ContainerStopped(app, "") },
			},
			want: []check{{true, false}, {true, true}, {false, false}},
		},
		{
			name: "startup only: ready once started", specs: []spec{startup(every10s)},
			steps: []func(*harness){
				func(h *harness) { h.start(app, "c1") },
				func(h *harness) { h.answer(appStart, success) },
			},
			want: []check{{false, false}, {true, true}},
		},
		{
			name: "liveness only: ready while running and alive", specs: []spec{liveness(corev1.Probe{PeriodSeconds: 10, FailureThreshold: 1})},
			steps: []func(*harness){
				func(h *harness) { h.start(app, "c1") },
				func(h *harness) { h.answer(appLive, failure) },
				func(h *harness) { h.m.ContainerStopped(app, "c1"); h.start(app, "c2") },
			},
			want: []check{{true, true}, {true, false}, {true, true}},
		},
		{
			name: "unknown container", specs: []spec{readiness(every10s)},
			steps: []func(*harness){func(h *harness) {}},
			want:  []check{{false, false}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.specs)
			for i, s := range tc.steps {
				s(h)
				got := check{h.m.Started(app), h.m.Ready(app)}
				if got != tc.want[i] {
					t.Fatalf("after step %d: Started=%t Ready=%t, want %+v", i, got.started, got.ready, tc.want[i])
				}
			}
		})
	}
}

func TestLivenessFailureAtThreshold(t *testing.T) {
	grace := int64(5)
	h := newHarness(t, []spec{
		readiness(every10s),
		liveness(corev1.Probe{PeriodSeconds: 10, FailureThreshold: 2, TerminationGracePeriodSeconds: &grace}),
	})
	h.start(app, "c1")
	h.answer(appReady, success)
	h.answer(appLive, failure)
	h.step(10 * time.Second)
	h.answer(appReady, success)
	h.answer(appLive, failure)
	// The container is taken out of service in the very update that asks
	// for its restart.
	wantUpdates(t, h,
		"app/Readiness Failure->Success by Probe started=true ready=true",
		"app/Liveness AttemptFailed started=true ready=true",
		"app/Liveness AttemptFailed started=true ready=true",
		"app/Liveness Success->Failure by Probe started=true ready=false restart")
	if h.m.Ready(app) {
		t.Fatal("Ready after liveness failed")
	}
	if s, _ := h.m.State(app, Liveness); s != Failure {
		t.Fatalf("liveness state %v, want Failure", s)
	}
	if cfg, ok := h.m.Config(app, Liveness); !ok || cfg.TerminationGracePeriodSeconds == nil || *cfg.TerminationGracePeriodSeconds != 5 {
		t.Fatalf("Config(liveness) = %+v, %t; want grace 5", cfg, ok)
	}
	// On hold until a new container exists; readiness goes on.
	for range 3 {
		h.step(10 * time.Second)
		if got := h.running(); got != "app/Readiness" {
			t.Fatalf("running %q at %v while liveness is on hold", got, h.clk.Since(t0))
		}
		h.answer(appReady, success)
	}
	h.m.ContainerStopped(app, "c1")
	h.start(app, "c2")
	wantUpdates(t, h,
		"app/Readiness Success->Failure by ContainerStopped started=false ready=false",
		"app/Liveness Failure->Success by ContainerReplaced started=true ready=false")
	if got := h.running(); got != "app/Liveness,app/Readiness" {
		t.Fatalf("running %q for the new container, want both at once", got)
	}
	// Fresh counters: one failure of the new container does not reach the
	// threshold of two.
	h.answer(appLive, failure)
	wantUpdates(t, h, "app/Liveness AttemptFailed started=true ready=false")
}

func TestStartupFailureAtThreshold(t *testing.T) {
	h := newHarness(t, []spec{
		startup(corev1.Probe{PeriodSeconds: 10, FailureThreshold: 2}),
		readiness(every10s),
	})
	h.start(app, "c1")
	h.answer(appStart, failure)
	h.step(10 * time.Second)
	h.answer(appStart, failure)
	wantUpdates(t, h,
		"app/Startup AttemptFailed started=false ready=false",
		"app/Startup AttemptFailed started=false ready=false",
		"app/Startup Unknown->Failure by Probe started=false ready=false restart")
	for range 3 {
		h.step(10 * time.Second)
		if got := h.running(); got != "" {
			t.Fatalf("running %q at %v after startup failed", got, h.clk.Since(t0))
		}
	}
	h.start(app, "c2")
	wantUpdates(t, h, "app/Startup Failure->Unknown by ContainerReplaced started=false ready=false")
	if got := h.running(); got != "app/Startup" {
		t.Fatalf("running %q for the new container, want app/Startup", got)
	}
}

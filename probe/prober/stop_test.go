package prober

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/probe"
)

func TestStopCancelsInFlightAttemptAndWaits(t *testing.T) {
	h := newHarness(t, []spec{readiness(every10s), liveness(every10s)})
	h.start(app, "c1")
	c := h.expect(appReady)
	h.m.Stop()
	select {
	case <-c.returned:
	default:
		t.Fatal("Stop returned before the in-flight attempt did")
	}
	if c.ctx.Err() == nil {
		t.Fatal("in-flight attempt's context not cancelled")
	}
	for _, w := range h.m.workers {
		if !w.exited.Load() {
			t.Fatalf("worker %s/%v still running after Stop", w.c.name, w.kind)
		}
	}
}

func TestStopIsFinal(t *testing.T) {
	h := newHarness(t, []spec{readiness(every10s)})
	h.start(app, "c1")
	h.answer(appReady, success)
	h.take()
	h.m.Stop()
	h.m.Stop()
	h.m.ContainerStarted(app, "c2", h.clk.Now())
	h.m.ContainerStopped(app, "c2")
	h.m.PodTerminating()
	h.m.PodStatusChanged()
	h.clk.Step(time.Minute)
	if got := h.take(); len(got) != 0 {
		t.Fatalf("updates after Stop: %v", got)
	}
	if n := h.attempts(appReady); n != 1 {
		t.Fatalf("%d attempts, want 1", n)
	}
	if !h.m.Ready(app) {
		t.Fatal("queries after Stop should answer the last state (Ready)")
	}
}

func TestStopDeliversQueuedUpdates(t *testing.T) {
	release := make(chan struct{})
	var got atomic.Int32
	clk := testclock.NewFakeClock(t0)
	m, err := NewManager([]Probe{{Container: app, Kind: Readiness, Spec: &corev1.Probe{}, Attempt: func(context.Context) probe.Outcome { return failure }}},
		Options{Clock: clk, OnUpdate: func(Update) {
			<-release
			got.Add(1)
		}})
	if err != nil {
		t.Fatal(err)
	}
	m.ContainerStarted(app, "c1", clk.Now()) // one AttemptFailed is queued behind the blocked callback
	waitFor(t, "the update to be queued", func() bool { return !m.out.idle() })
	done := make(chan struct{})
	go func() { m.Stop(); close(done) }()
	close(release)
	<-done
	if got.Load() != 1 {
		t.Fatalf("delivered %d updates, want 1", got.Load())
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

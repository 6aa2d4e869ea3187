package prober

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/probe"
)

// TestBlockedCallbackDoesNotBlockWorkers: a consumer that is slow (or stuck)
// in OnUpdate must not stall probing; updates queue up and arrive in order.
func TestBlockedCallbackDoesNotBlockWorkers(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	var attempts atomic.Int32
	results := []probe.Outcome{success, failure, failure, failure, success}
	release := make(chan struct{})
	var mu sync.Mutex
	var got []string
	m, err := NewManager([]Probe{{Container: app, Kind: Readiness, Spec: &corev1.Probe{PeriodSeconds: 1}, Attempt: func(context.Context) probe.Outcome {
		n := attempts.Add(1)
		return results[(n-1)%int32(len(results))]
	}}}, Options{Clock: clk, OnUpdate: func(u Update) {
		<-release
		mu.Lock()
		got = append(got, brief(u))
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	m.ContainerStarted(app, "c1", clk.Now())
	for i := int32(1); i < int32(len(results)); i++ {
		waitFor(t, "the next attempt", func() bool { return attempts.Load() >= i })
		waitFor(t, "the worker to wait on the clock", func() bool { return m.workers[0].idle() })
		clk.Step(time.Second)
	}
	waitFor(t, "every attempt", func() bool { return attempts.Load() == int32(len(results)) })
	if !m.Ready(app) {
		t.Fatal("queries must answer while the callback is blocked")
	}
	close(release)
	waitFor(t, "delivery", func() bool { return m.out.idle() })
	want := []string{
		"app/Readiness Failure->Success by Probe started=true ready=true",
		"app/Readiness AttemptFailed started=true ready=true",
		"app/Readiness AttemptFailed started=true ready=true",
		"app/Readiness AttemptFailed started=true ready=true",
		"app/Readiness Success->Failure by Probe started=true ready=false",
		"app/Readiness Failure->Success by Probe started=true ready=true",
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("update %d = %q, want %q (all: %q)", i, got[i], want[i], got)
		}
	}
}

// TestCallbackMayCallManager: OnUpdate runs without the Manager's lock, so
// it can query and drive it.
func TestCallbackMayCallManager(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	seen := make(chan bool, 10)
	var m *Manager
	var err error
	var calls atomic.Int32
	fail := func(context.Context) probe.Outcome {
		if calls.Add(1) == 1 {
			return failure
		}
		return success // the new container is healthy
	}
	m, err = NewManager([]Probe{{Container: app, Kind: Liveness, Spec: &corev1.Probe{FailureThreshold: 1}, Attempt: fail}},
		Options{Clock: clk, OnUpdate: func(u Update) {
			if u.Restart && u.ContainerID == "c1" {
				seen <- m.Ready(app)
				// The runtime kills and restarts from here.
				m.ContainerStopped(app, u.ContainerID)
				m.ContainerStarted(app, "c2", clk.Now())
				seen <- m.Ready(app)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	m.ContainerStarted(app, "c1", clk.Now())
	for i, want := range []bool{false, true} {
		select {
		case got := <-seen:
			if got != want {
				t.Fatalf("Ready seen from the callback (%d) = %t, want %t", i, got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("callback never ran")
		}
	}
}

func TestPanickingAttemptIsAnError(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	got := make(chan Update, 10)
	m, err := NewManager([]Probe{{Container: app, Kind: Readiness, Spec: &corev1.Probe{}, Attempt: func(context.Context) probe.Outcome { panic("boom") }}},
		Options{Clock: clk, OnUpdate: func(u Update) { got <- u }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	m.ContainerStarted(app, "c1", clk.Now())
	select {
	case u := <-got:
		if u.Type != AttemptErrored || u.Outcome.Err == nil || u.Outcome.Err.Error() != "probe attempt panicked: boom" {
			t.Fatalf("update = %+v", u)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no update")
	}
	if s, _ := m.State(app, Readiness); s != Failure {
		t.Fatalf("readiness %v after a panicking attempt, want Failure kept", s)
	}
}

package activator

import (
	"testing"
	"time"
)

// TestChangedSignalsReadyCount pins the notification service status rests
// on: a signal when the number of usable backends changes, none while it
// stays the same, and the newest count readable after it.
func TestChangedSignalsReadyCount(t *testing.T) {
	h := newHarness(t, Config{})
	g := newGate(t, "a", true, nil)
	expectSignal := func(what string, want int) {
		t.Helper()
		deadline := time.After(patience)
		for {
			select {
			case <-h.target.Changed():
				if got := h.target.Status().Ready; got == want {
					return
				}
			case <-deadline:
				t.Fatalf("%s: no signal with %d ready (status %+v)", what, want, h.target.Status())
			}
		}
	}
	h.target.Update([]Pod{g.pod(true, false)})
	expectSignal("pod ready in both views", 1)

	// More health checks that change nothing send nothing.
	n := h.backend("a").Probes
	waitFor(t, "three more health checks", func() bool {
		h.clock.Step(DefaultProbeInterval)
		return h.backend("a").Probes >= n+3
	})
	select {
	case <-h.target.Changed():
		t.Fatalf("signal without a change: %+v", h.target.Status())
	default:
	}

	h.target.Update([]Pod{g.pod(false, false)})
	expectSignal("endpoint not ready", 0)
}

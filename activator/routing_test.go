package activator

import (
	"net/http"
	"testing"
)

// TestRoutingRule pins which pods get traffic: both views must agree, and
// the gate alone suffices only on the fast path before the first endpoint
// readiness.
func TestRoutingRule(t *testing.T) {
	tests := []struct {
		name string
		// the candidate pod, next to an always-ready "other" pod
		endpointReady, fastPath, gateReady, terminating bool
		// was the endpoint ready once before (the pod is sent ready first)
		wasReady bool
		wantUsed bool
	}{
		{name: "endpoint not ready and fast path disallowed: no traffic although the gate says ready",
			gateReady: true},
		{name: "fast path allowed: traffic on the gate's answer before the endpoint turns ready",
			fastPath: true, gateReady: true, wantUsed: true},
		{name: "fast path allowed but gate not ready: no traffic",
			fastPath: true},
		{name: "endpoint ready and gate ready: traffic",
			endpointReady: true, gateReady: true, wantUsed: true},
		{name: "endpoint ready but gate not ready: no traffic",
			endpointReady: true},
		{name: "terminating pod gets no traffic although its gate says ready",
			endpointReady: true, gateReady: true, terminating: true, fastPath: true},
		{name: "fast path no longer applies once the endpoint was ready",
			wasReady: true, fastPath: true, gateReady: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			cand := newGate(t, "cand", tc.gateReady, nil)
			other := newGate(t, "other", true, nil)
			pod := cand.pod(tc.endpointReady, tc.fastPath)
			pod.Terminating = tc.terminating
			if tc.wasReady {
				first := pod
				first.Ready = true
				h.target.Update([]Pod{first, other.pod(true, false)})
			}
			h.target.Update([]Pod{pod, other.pod(true, false)})
			h.probed(1, other)
			if !tc.terminating {
				h.probed(1, cand)
			}
			if got := h.backend("cand").Usable; got != tc.wantUsed {
				t.Fatalf("usable = %v, want %v (%+v)", got, tc.wantUsed, h.backend("cand"))
			}
			const n = 10
			for i := 0; i < n; i++ {
				if r := h.get(); r.err != nil || r.code != http.StatusOK {
					t.Fatalf("request %d: %+v", i, r)
				}
			}
			if got := cand.served.Load(); (got > 0) != tc.wantUsed {
				t.Errorf("candidate served %d of %d requests, want used=%v", got, n, tc.wantUsed)
			}
			if got := cand.served.Load() + other.served.Load(); got != n {
				t.Errorf("gates served %d requests, want %d", got, n)
			}
		})
	}
}

func TestOnlyPodGetsTrafficOnFastPath(t *testing.T) {
	h := newHarness(t, Config{})
	g := newGate(t, "a", true, nil)
	h.target.Update([]Pod{g.pod(false, true)})
	if r := h.get(); r.code != http.StatusOK || r.body != "a" {
		t.Fatalf("got %+v, want 200 from a before its endpoint is ready", r)
	}
}

func TestUnreadyBackendStopsGettingRequestsAtOnce(t *testing.T) {
	t.Run("endpoint turns unready: out as soon as the update is applied", func(t *testing.T) {
		h := newHarness(t, Config{})
		a, b := newGate(t, "a", true, nil), newGate(t, "b", true, nil)
		h.target.Update([]Pod{a.pod(true, true), b.pod(true, true)})
		h.probed(1, a, b)
		h.target.Update([]Pod{a.pod(false, true), b.pod(true, true)})
		if h.backend("a").Usable {
			t.Fatal("a still usable right after its endpoint turned unready")
		}
		before := a.served.Load()
		for i := 0; i < 10; i++ {
			if r := h.get(); r.code != http.StatusOK || r.body != "b" {
				t.Fatalf("request %d: %+v, want 200 from b", i, r)
			}
		}
		if a.served.Load() != before {
			t.Error("a got requests after its endpoint turned unready")
		}
		// Re-probed at once, without waiting for the interval.
		h.probed(2, a)
	})
	t.Run("gate turns unready: out at the next health check", func(t *testing.T) {
		h := newHarness(t, Config{})
		a, b := newGate(t, "a", true, nil), newGate(t, "b", true, nil)
		h.target.Update([]Pod{a.pod(true, false), b.pod(true, false)})
		h.probed(1, a, b)
		a.ready.Store(false)
		h.clock.Step(DefaultProbeInterval)
		waitFor(t, "a's gate seen unready", func() bool { return !h.backend("a").GateReady })
		before := a.served.Load()
		for i := 0; i < 10; i++ {
			if r := h.get(); r.code != http.StatusOK || r.body != "b" {
				t.Fatalf("request %d: %+v, want 200 from b", i, r)
			}
		}
		if a.served.Load() != before {
			t.Error("a got requests after its gate turned unready")
		}
	})
	t.Run("pod removed from the endpoints: no new requests", func(t *testing.T) {
		h := newHarness(t, Config{})
		a, b := newGate(t, "a", true, nil), newGate(t, "b", true, nil)
		h.target.Update([]Pod{a.pod(true, false), b.pod(true, false)})
		h.probed(1, a, b)
		h.target.Update([]Pod{b.pod(true, false)})
		for i := 0; i < 5; i++ {
			if r := h.get(); r.body != "b" {
				t.Fatalf("request %d: %+v, want 200 from b", i, r)
			}
		}
		if a.served.Load() != 0 {
			t.Error("removed pod got requests")
		}
	})
}

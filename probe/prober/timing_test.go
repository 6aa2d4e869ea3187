package prober

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

var (
	app       = "app"
	appReady  = key{app, Readiness}
	appLive   = key{app, Liveness}
	appStart  = key{app, Startup}
	every10s  = corev1.Probe{PeriodSeconds: 10}
	readiness = func(p corev1.Probe) spec { return spec{app, Readiness, p} }
	liveness  = func(p corev1.Probe) spec { return spec{app, Liveness, p} }
	startup   = func(p corev1.Probe) spec { return spec{app, Startup, p} }
)

func TestFirstRunImmediatelyThenFixedRate(t *testing.T) {
	h := newHarness(t, []spec{readiness(every10s)})
	if got := h.running(); got != "" {
		t.Fatalf("attempts before any container started: %s", got)
	}
	h.start(app, "c1")
	for _, want := range []time.Duration{0, 10 * time.Second, 20 * time.Second, 30 * time.Second} {
		if c := h.answer(appReady, success); c.at != want {
			t.Fatalf("attempt at %v, want %v", c.at, want)
		}
		h.step(9 * time.Second)
		if got := h.running(); got != "" {
			t.Fatalf("attempt %s a second before the period ended", got)
		}
		h.step(time.Second)
	}
}

func TestDefaultPeriodIsTenSeconds(t *testing.T) {
	h := newHarness(t, []spec{readiness(corev1.Probe{})})
	h.start(app, "c1")
	h.answer(appReady, success)
	h.step(10*time.Second - time.Nanosecond)
	if got := h.running(); got != "" {
		t.Fatalf("attempt before the default period: %s", got)
	}
	h.step(time.Nanosecond)
	if c := h.expect(appReady); c.at != 10*time.Second {
		t.Fatalf("second attempt at %v, want 10s", c.at)
	}
}

func TestSlowAttemptDropsTicksNeverStretchesPeriod(t *testing.T) {
	h := newHarness(t, []spec{readiness(corev1.Probe{PeriodSeconds: 10, TimeoutSeconds: 30})})
	h.start(app, "c1")
	h.expect(appReady)
	// The attempt started at 0 overruns the points at 10 and 20.
	h.step(25 * time.Second)
	if n := h.attempts(appReady); n != 1 {
		t.Fatalf("%d attempts while the first was still running, want 1", n)
	}
	h.answer(appReady, success)
	// The overrun points collapse into one catch-up run, as with a Go ticker.
	if c := h.answer(appReady, success); c.at != 25*time.Second {
		t.Fatalf("catch-up attempt at %v, want 25s", c.at)
	}
	h.step(4 * time.Second)
	if got := h.running(); got != "" {
		t.Fatalf("attempt %s before the grid point at 30s", got)
	}
	// Back on the original grid: 30s, not 35s.
	h.step(time.Second)
	if c := h.expect(appReady); c.at != 30*time.Second {
		t.Fatalf("attempt at %v, want 30s", c.at)
	}
	if n := h.attempts(appReady); n != 3 {
		t.Fatalf("%d attempts in 30s, want 3 (two ticks dropped)", n)
	}
}

func TestInitialDelay(t *testing.T) {
	delayed := corev1.Probe{PeriodSeconds: 10, InitialDelaySeconds: 15}
	for _, tc := range []struct {
		name string
		// container started this long before it is reported
		startedAgo time.Duration
		// manager created this long before the container is reported
		managerAge time.Duration
		want       []time.Duration // first attempts, since t0
	}{
		{"counted from container start, not worker creation", 0, 30 * time.Second, []time.Duration{45 * time.Second, 55 * time.Second}},
		{"a container reported late has already served part of it", 10 * time.Second, 30 * time.Second, []time.Duration{35 * time.Second, 45 * time.Second}},
		{"a container started long ago is probed at once", time.Minute, 90 * time.Second, []time.Duration{90 * time.Second, 100 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, []spec{readiness(delayed)})
			h.step(tc.managerAge)
			h.m.ContainerStarted(app, "c1", h.clk.Now().Add(-tc.startedAgo))
			h.settle()
			for _, want := range tc.want {
				for h.clk.Since(t0) < want {
					if got := h.running(); got != "" {
						t.Fatalf("attempt at %v, want none before %v", h.clk.Since(t0), want)
					}
					h.step(time.Second)
				}
				if c := h.answer(appReady, success); c.at != want {
					t.Fatalf("attempt at %v, want %v", c.at, want)
				}
			}
		})
	}
}

func TestJitterOnlyAfterAgentStart(t *testing.T) {
	t.Run("first run delayed by the jitter, later runs on its grid", func(t *testing.T) {
		var asked []time.Duration
		h := newHarness(t, []spec{readiness(every10s)}, func(o *Options) {
			o.AgentJustStarted = true
			o.Jitter = func(p time.Duration) time.Duration { asked = append(asked, p); return 3 * time.Second }
		})
		h.start(app, "c1")
		h.step(3*time.Second - time.Nanosecond)
		if got := h.running(); got != "" {
			t.Fatalf("attempt %s before the jitter passed", got)
		}
		h.step(time.Nanosecond)
		if c := h.answer(appReady, success); c.at != 3*time.Second {
			t.Fatalf("first attempt at %v, want 3s", c.at)
		}
		h.step(10 * time.Second)
		if c := h.answer(appReady, success); c.at != 13*time.Second {
			t.Fatalf("second attempt at %v, want 13s", c.at)
		}
		// A replacement container is probed at once: the jitter was for the
		// first run only.
		h.m.ContainerStopped(app, "c1")
		h.start(app, "c2")
		if c := h.expect(appReady); c.at != 13*time.Second {
			t.Fatalf("new container probed at %v, want at once (13s)", c.at)
		}
		if len(asked) != 1 || asked[0] != 10*time.Second {
			t.Fatalf("jitter asked for %v, want once for the 10s period", asked)
		}
	})
	t.Run("no jitter otherwise", func(t *testing.T) {
		h := newHarness(t, []spec{readiness(every10s)}, func(o *Options) {
			o.Jitter = func(time.Duration) time.Duration { t.Error("jitter used without AgentJustStarted"); return time.Second }
		})
		h.start(app, "c1")
		if c := h.expect(appReady); c.at != 0 {
			t.Fatalf("first attempt at %v, want at once", c.at)
		}
	})
	t.Run("default jitter lies in [0, period)", func(t *testing.T) {
		period := 10 * time.Second
		var lo, hi bool
		for range 2000 {
			d := randomJitter(period)
			if d < 0 || d >= period {
				t.Fatalf("jitter %v outside [0, %v)", d, period)
			}
			lo = lo || d < period/4
			hi = hi || d > 3*period/4
		}
		if !lo || !hi {
			t.Fatalf("2000 draws did not spread over the period (low seen %t, high seen %t)", lo, hi)
		}
	})
}

func TestPodStatusChangeRerunsReadiness(t *testing.T) {
	t.Run("while not Success: runs now and the period restarts there", func(t *testing.T) {
		h := newHarness(t, []spec{readiness(every10s)})
		h.start(app, "c1")
		h.answer(appReady, failure)
		h.step(4 * time.Second)
		h.m.PodStatusChanged()
		if c := h.answer(appReady, failure); c.at != 4*time.Second {
			t.Fatalf("manual attempt at %v, want 4s", c.at)
		}
		h.step(9 * time.Second)
		if got := h.running(); got != "" {
			t.Fatalf("attempt %s at the old grid point", got)
		}
		h.step(time.Second)
		if c := h.expect(appReady); c.at != 14*time.Second {
			t.Fatalf("next attempt at %v, want 14s", c.at)
		}
	})
	t.Run("once Success: nothing", func(t *testing.T) {
		h := newHarness(t, []spec{readiness(every10s)})
		h.start(app, "c1")
		h.answer(appReady, success)
		h.step(4 * time.Second)
		h.m.PodStatusChanged()
		if got := h.running(); got != "" {
			t.Fatalf("attempt %s after a status change while ready", got)
		}
	})
	t.Run("during the initial delay: waits for the delay", func(t *testing.T) {
		h := newHarness(t, []spec{readiness(corev1.Probe{PeriodSeconds: 10, InitialDelaySeconds: 5})})
		h.start(app, "c1")
		h.step(2 * time.Second)
		h.m.PodStatusChanged()
		if got := h.running(); got != "" {
			t.Fatalf("attempt %s during the initial delay", got)
		}
		h.step(3 * time.Second)
		if c := h.expect(appReady); c.at != 5*time.Second {
			t.Fatalf("first attempt at %v, want 5s", c.at)
		}
	})
	t.Run("liveness is not rerun", func(t *testing.T) {
		h := newHarness(t, []spec{liveness(every10s)})
		h.start(app, "c1")
		h.answer(appLive, failure)
		h.step(4 * time.Second)
		h.m.PodStatusChanged()
		if got := h.running(); got != "" {
			t.Fatalf("attempt %s after a status change", got)
		}
	})
}

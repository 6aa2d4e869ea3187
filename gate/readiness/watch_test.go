package readiness

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/gate/contract"

	"github.com/podgate/podgate/probe"
	"github.com/podgate/podgate/test/testapp"
)

// TestWatchedLivenessDropsReadinessOneFailureBeforeTheKubeletsThreshold:
// the gate's own copy of a liveness probe runs on the probe's schedule
// (first tick after initialDelaySeconds, then every periodSeconds) and the
// container stops counting as ready at failureThreshold − 1 failures in a
// row (at 1 for a threshold of 1), ready again when liveness passes.
func TestWatchedLivenessDropsReadinessOneFailureBeforeTheKubeletsThreshold(t *testing.T) {
	for _, tc := range []struct {
		name      string
		threshold int32
		dropAfter int
	}{
		{"threshold 3 drops readiness after the second failure", 3, 2},
		{"threshold 1 drops readiness after the first failure", 1, 1},
		{"unset threshold means 3", 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := startApp(t, testapp.Config{})
			live := httpProbe(portOf(t, app.Addr()), "/healthz", 4)
			live.InitialDelaySeconds = 2
			live.FailureThreshold = tc.threshold
			fake := testingclock.NewFakeClock(time.Now())
			ticks := make(chan probe.Outcome, 16)
			s := start(t, []Container{{Name: "app", Serving: true, Liveness: live}}, Options{
				Clock:     fake,
				OnWatched: func(_ string, out probe.Outcome) { ticks <- out },
			})
			// The only waiter on the clock is the watch loop (the serving
			// container has no readiness probe and no user port here).
			idle := func() {
				eventually(t, "the watch loop waits for its next tick", func() bool { return fake.Waiters() == 1 })
			}
			tick := func(step time.Duration, want probe.Result) {
				t.Helper()
				idle()
				fake.Step(step)
				select {
				case out := <-ticks:
					if out.Result != want {
						t.Fatalf("tick: %v %q, want %v", out.Result, out.Message, want)
					}
				case <-time.After(testWait):
					t.Fatal("no tick after stepping the clock")
				}
			}
			idle()
			fake.Step(time.Second)
			select {
			case out := <-ticks:
				t.Fatalf("a tick (%v) before initialDelaySeconds", out.Result)
			case <-time.After(50 * time.Millisecond):
			}
			tick(time.Second, probe.Success) // initialDelaySeconds reached
			app.SetLive(false)
			for i := 1; i <= tc.dropAfter; i++ {
				tick(4*time.Second, probe.Failure)
				if want := i < tc.dropAfter; s.Ready() != want {
					t.Fatalf("after %d watched failure(s): ready %v, want %v", i, s.Ready(), want)
				}
			}
			r := s.report(t, "app")
			if !strings.Contains(r.Reason, "liveness probe failed") || !strings.Contains(r.Watched, "liveness watched: httpGet, every 4s") {
				t.Errorf("report %+v, want the liveness hold and the watched probe described", r)
			}
			app.SetLive(true)
			tick(4*time.Second, probe.Success)
			if !s.Ready() {
				t.Error("not ready after liveness passed again")
			}
		})
	}
}

// TestExcludedContainersAreNeitherProbedNorCounted: Containers leaves an
// excluded container out even when the configuration gives it probes, and
// refuses to exclude the serving container.
func TestExcludedContainersAreNeitherProbedNorCounted(t *testing.T) {
	cfg := configWithSidecar()
	cfg.ExcludedContainers = []string{"side"}
	specs, err := Containers(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 1 || specs[0].Name != "app" {
		t.Fatalf("containers %+v, want only app", specs)
	}
	cfg.ExcludedContainers = []string{"app"}
	if _, err := Containers(cfg); err == nil || !strings.Contains(err.Error(), "PODGATE_EXCLUDED_CONTAINERS: the serving container \"app\" cannot be excluded") {
		t.Errorf("excluding the serving container: %v", err)
	}
}

func configWithSidecar() contract.Config {
	cfg := contract.Defaults()
	cfg.Containers = []string{"app", "side"}
	cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(1, 1), tcpProbe(2, 1)}
	cfg.ReadinessContainers = []string{"app", "side"}
	cfg.WatchedProbes = map[string]contract.ContainerProbes{"side": {Liveness: tcpProbe(2, 1)}}
	return cfg
}

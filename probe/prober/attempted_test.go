package prober

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/probe"
)

// TestEveryAttemptReportsEachTickAfterItsThresholds pins the Attempted
// Update of Options.EveryAttempt: one per tick, successes included, last
// of the tick's Updates, with the state after the thresholds and the
// restart the tick asked for.
func TestEveryAttemptReportsEachTickAfterItsThresholds(t *testing.T) {
	outcomes := map[string]probe.Outcome{"S": success, "F": failure, "E": errored}
	for _, tc := range []struct {
		name  string
		kind  Kind
		ticks []string
		// want is each tick's Updates, the Attempted one as
		// "Attempted RESULT state=STATE [restart]".
		want [][]string
	}{
		{
			name: "a success that publishes readiness", kind: Readiness,
			ticks: []string{"S", "S"},
			want: [][]string{
				{"app/Readiness Failure->Success by Probe started=true ready=true", "Attempted success state=Success"},
				{"Attempted success state=Success"},
			},
		},
		{
			name: "liveness failures up to the restart", kind: Liveness,
			ticks: []string{"F", "E", "F"},
			want: [][]string{
				{"app/Liveness AttemptFailed started=true ready=true", "Attempted failure state=Success"},
				{"app/Liveness AttemptErrored started=true ready=true", "Attempted error state=Success"},
				{
					"app/Liveness AttemptFailed started=true ready=true",
					"app/Liveness Success->Failure by Probe started=true ready=false restart",
					"Attempted failure state=Failure restart",
				},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, []spec{{app, tc.kind, corev1.Probe{PeriodSeconds: 10, FailureThreshold: 2}}},
				func(o *Options) { o.EveryAttempt = true })
			h.start(app, "c1")
			k := key{app, tc.kind}
			for i, r := range tc.ticks {
				if i > 0 {
					h.step(10 * time.Second)
				}
				h.answer(k, outcomes[r])
				var got []string
				for _, u := range h.take() {
					if u.Type != Attempted {
						got = append(got, brief(u))
						continue
					}
					if u.Container != app || u.ContainerID != "c1" || u.Kind != tc.kind || !u.At.Equal(h.clk.Now()) {
						t.Errorf("Attempted %+v: want container app, c1, kind %s, at the tick", u, tc.kind)
					}
					s := "Attempted " + u.Outcome.Result.String() + " state=" + u.State.String()
					if u.Restart {
						s += " restart"
					}
					got = append(got, s)
				}
				if !slices.Equal(got, tc.want[i]) {
					t.Fatalf("tick %d (%s):\n got  %q\n want %q", i, r, got, tc.want[i])
				}
			}
		})
	}
}

// TestWithoutEveryAttemptNoAttemptedUpdate: the runtime's and the gate's
// Managers see no new Update unless they ask.
func TestWithoutEveryAttemptNoAttemptedUpdate(t *testing.T) {
	h := newHarness(t, []spec{{app, Readiness, corev1.Probe{PeriodSeconds: 10}}})
	h.start(app, "c1")
	h.answer(key{app, Readiness}, success)
	h.step(10 * time.Second)
	h.answer(key{app, Readiness}, failure)
	for _, s := range h.takeStrings() {
		if strings.Contains(s, "Attempted") {
			t.Fatalf("an Attempted Update without EveryAttempt: %s", s)
		}
	}
}

package prober

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/probe"
)

// TestThresholds feeds one worker a sequence of tick results and checks
// what is published after each tick.
func TestThresholds(t *testing.T) {
	const (
		S = "S" // success
		F = "F" // failure
		W = "W" // warning
		E = "E" // error
		X = "X" // a Result value out of range
	)
	outcomes := map[string]probe.Outcome{S: success, F: failure, W: warning, E: errored, X: {Result: probe.Result(42)}}
	for _, tc := range []struct {
		name  string
		kind  Kind
		probe corev1.Probe
		ticks []string
		// want maps a tick index to the updates it causes; other ticks
		// cause none.
		want map[int][]string
	}{
		{
			name: "one success publishes with the default threshold", kind: Readiness,
			ticks: []string{S},
			want:  map[int][]string{0: {"app/Readiness Failure->Success by Probe started=true ready=true"}},
		},
		{
			name: "successThreshold counts consecutive successes only", kind: Readiness,
			probe: corev1.Probe{SuccessThreshold: 3},
			ticks: []string{S, S, F, S, S, S},
			want: map[int][]string{
				2: {"app/Readiness AttemptFailed started=true ready=false"},
				5: {"app/Readiness Failure->Success by Probe started=true ready=true"},
			},
		},
		{
			name: "default failureThreshold is three consecutive failures", kind: Readiness,
			ticks: []string{S, F, F, S, F, F, F},
			want: map[int][]string{
				0: {"app/Readiness Failure->Success by Probe started=true ready=true"},
				1: {"app/Readiness AttemptFailed started=true ready=true"},
				2: {"app/Readiness AttemptFailed started=true ready=true"},
				4: {"app/Readiness AttemptFailed started=true ready=true"},
				5: {"app/Readiness AttemptFailed started=true ready=true"},
				6: {"app/Readiness AttemptFailed started=true ready=true", "app/Readiness Success->Failure by Probe started=true ready=false"},
			},
		},
		{
			name: "published only on change", kind: Readiness,
			ticks: []string{S, S, S, S},
			want:  map[int][]string{0: {"app/Readiness Failure->Success by Probe started=true ready=true"}},
		},
		{
			name: "failures at threshold on an already failing readiness publish nothing", kind: Readiness,
			probe: corev1.Probe{FailureThreshold: 1},
			ticks: []string{F, F},
			want: map[int][]string{
				0: {"app/Readiness AttemptFailed started=true ready=false"},
				1: {"app/Readiness AttemptFailed started=true ready=false"},
			},
		},
		{
			name: "warning counts as success and is reported", kind: Readiness,
			probe: corev1.Probe{SuccessThreshold: 2},
			ticks: []string{S, W},
			want: map[int][]string{1: {
				"app/Readiness AttemptWarned started=true ready=false",
				"app/Readiness Failure->Success by Probe started=true ready=true",
			}},
		},
		{
			name: "an error is reported and dropped without breaking a streak", kind: Liveness,
			ticks: []string{F, F, E, F},
			want: map[int][]string{
				0: {"app/Liveness AttemptFailed started=true ready=true"},
				1: {"app/Liveness AttemptFailed started=true ready=true"},
				2: {"app/Liveness AttemptErrored started=true ready=true"},
				3: {"app/Liveness AttemptFailed started=true ready=true", "app/Liveness Success->Failure by Probe started=true ready=false restart"},
			},
		},
		{
			name: "errors alone leave the initial state", kind: Readiness,
			ticks: []string{E, E, E, E},
			want: map[int][]string{
				0: {"app/Readiness AttemptErrored started=true ready=false"},
				1: {"app/Readiness AttemptErrored started=true ready=false"},
				2: {"app/Readiness AttemptErrored started=true ready=false"},
				3: {"app/Readiness AttemptErrored started=true ready=false"},
			},
		},
		{
			name: "an error between successes does not reset their count", kind: Readiness,
			probe: corev1.Probe{SuccessThreshold: 2},
			ticks: []string{S, E, S},
			want: map[int][]string{
				1: {"app/Readiness AttemptErrored started=true ready=false"},
				2: {"app/Readiness Failure->Success by Probe started=true ready=true"},
			},
		},
		{
			name: "an unknown result value is treated as an error", kind: Readiness,
			ticks: []string{X, S},
			want: map[int][]string{
				0: {"app/Readiness AttemptErrored started=true ready=false"},
				1: {"app/Readiness Failure->Success by Probe started=true ready=true"},
			},
		},
		{
			name: "a success breaks a liveness failure streak", kind: Liveness,
			probe: corev1.Probe{FailureThreshold: 2},
			ticks: []string{F, S, F, F},
			want: map[int][]string{
				0: {"app/Liveness AttemptFailed started=true ready=true"},
				2: {"app/Liveness AttemptFailed started=true ready=true"},
				3: {"app/Liveness AttemptFailed started=true ready=true", "app/Liveness Success->Failure by Probe started=true ready=false restart"},
			},
		},
		{
			name: "startup publishes Success on its first success", kind: Startup,
			ticks: []string{F, F, S},
			want: map[int][]string{
				0: {"app/Startup AttemptFailed started=false ready=false"},
				1: {"app/Startup AttemptFailed started=false ready=false"},
				2: {"app/Startup Unknown->Success by Probe started=true ready=true"},
			},
		},
		{
			name: "startup fails at its threshold", kind: Startup,
			probe: corev1.Probe{FailureThreshold: 2},
			ticks: []string{F, F},
			want: map[int][]string{
				0: {"app/Startup AttemptFailed started=false ready=false"},
				1: {"app/Startup AttemptFailed started=false ready=false", "app/Startup Unknown->Failure by Probe started=false ready=false restart"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.probe
			p.PeriodSeconds = 10
			h := newHarness(t, []spec{{app, tc.kind, p}})
			h.start(app, "c1")
			k := key{app, tc.kind}
			for i, r := range tc.ticks {
				if i > 0 {
					h.step(10 * time.Second)
				}
				h.answer(k, outcomes[r])
				got := h.takeStrings()
				want := tc.want[i]
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Fatalf("after ticks %v:\n got  %q\n want %q", tc.ticks[:i+1], got, want)
				}
			}
		})
	}
}

// TestUpdateCarriesOutcome pins what a StateChanged caused by a probe
// carries for the runtime's events and kill.
func TestUpdateCarriesOutcome(t *testing.T) {
	grace := int64(7)
	h := newHarness(t, []spec{liveness(corev1.Probe{PeriodSeconds: 10, FailureThreshold: 1, TerminationGracePeriodSeconds: &grace})})
	h.start(app, "c1")
	h.step(10 * time.Second)
	h.answer(appLive, failure)
	us := h.take()
	if len(us) != 2 {
		t.Fatalf("got %d updates, want AttemptFailed then StateChanged: %v", len(us), us)
	}
	u := us[1]
	if u.Type != StateChanged || u.Container != app || u.ContainerID != "c1" || u.Kind != Liveness ||
		u.State != Failure || u.Previous != Success || u.Cause != CauseProbe || !u.Restart || u.Ready {
		t.Fatalf("state change = %+v", u)
	}
	if u.Outcome.Message != failure.Message {
		t.Fatalf("outcome message %q, want %q", u.Outcome.Message, failure.Message)
	}
	if u.TerminationGracePeriodSeconds == nil || *u.TerminationGracePeriodSeconds != 7 {
		t.Fatalf("grace override = %v, want 7", u.TerminationGracePeriodSeconds)
	}
	if !u.At.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("At = %v, want t0+10s", u.At)
	}
	if us[0].Type != AttemptFailed || us[0].Outcome.Message != failure.Message {
		t.Fatalf("attempt note = %+v", us[0])
	}
}

func TestEventText(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		u                    Update
		typ, reason, message string
		ok                   bool
	}{
		{"failed tick is Unhealthy", Update{Type: AttemptFailed, Kind: Liveness, Outcome: failure},
			"Warning", "Unhealthy", "Liveness probe failed: HTTP probe failed with statuscode: 500", true},
		{"warned tick is ProbeWarning", Update{Type: AttemptWarned, Kind: Readiness, Outcome: warning},
			"Warning", "ProbeWarning", "Readiness probe warning: Probe terminated redirects, Response body: ", true},
		{"errored tick is Unhealthy with the error", Update{Type: AttemptErrored, Kind: Startup, Outcome: errored},
			"Warning", "Unhealthy", `Startup probe errored and resulted in unknown state: strconv.Atoi: parsing "http": invalid syntax`, true},
		{"errored tick without an error uses the message", Update{Type: AttemptErrored, Kind: Readiness, Outcome: probe.Outcome{Message: "boom"}},
			"Warning", "Unhealthy", "Readiness probe errored and resulted in unknown state: boom", true},
		{"state change records no event", Update{Type: StateChanged, Kind: Liveness, State: Failure}, "", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ, reason, msg, ok := tc.u.Event()
			if got, want := fmt.Sprint(typ, "|", reason, "|", msg, "|", ok), fmt.Sprint(tc.typ, "|", tc.reason, "|", tc.message, "|", tc.ok); got != want {
				t.Fatalf("Event() = %s, want %s", got, want)
			}
		})
	}
}

package termination

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestPodGraceIsTheSpecsOrThirtySeconds(t *testing.T) {
	t.Parallel()
	five, zero := int64(5), int64(0)
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want time.Duration
	}{
		{"unset is 30s", corev1.PodSpec{}, 30 * time.Second},
		{"the spec's seconds", corev1.PodSpec{TerminationGracePeriodSeconds: &five}, 5 * time.Second},
		{"0 stays 0", corev1.PodSpec{TerminationGracePeriodSeconds: &zero}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodGrace(&tc.spec); got != tc.want {
				t.Fatalf("PodGrace = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestBeginSetsTheGracePeriodAndLaterDeletionsOnlyShortenIt(t *testing.T) {
	t.Parallel()
	type begin struct {
		at    time.Duration // after t0
		grace time.Duration
		began bool // what Begin reports
	}
	for _, tc := range []struct {
		name         string
		begins       []begin
		wantDeadline time.Duration // after t0
		wantSeconds  int64
		wantForced   bool
	}{
		{"the first deletion sets deadline and seconds",
			[]begin{{0, 30 * time.Second, true}}, 30 * time.Second, 30, false},
		{"a grace period of 0 forces at once",
			[]begin{{0, 0, true}}, 0, 0, true},
		{"a shorter second deletion shortens the deadline",
			[]begin{{0, 30 * time.Second, true}, {time.Second, 5 * time.Second, false}}, 6 * time.Second, 5, false},
		{"a longer second deletion changes nothing",
			[]begin{{0, 10 * time.Second, true}, {time.Second, 60 * time.Second, false}}, 10 * time.Second, 10, false},
		{"a second deletion ending at the same moment changes nothing",
			[]begin{{0, 10 * time.Second, true}, {5 * time.Second, 5 * time.Second, false}}, 10 * time.Second, 10, false},
		{"a second deletion with 0 forces and ends the grace period",
			[]begin{{0, 30 * time.Second, true}, {2 * time.Second, 0, false}}, 2 * time.Second, 0, true},
		{"0 forces even after the deadline passed",
			[]begin{{0, time.Second, true}, {5 * time.Second, 0, false}}, time.Second, 1, true},
		{"a fraction of a second counts as whole seconds down",
			[]begin{{0, 2500 * time.Millisecond, true}}, 2500 * time.Millisecond, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s State
			for i, b := range tc.begins {
				if got := s.Begin(t0.Add(b.at), b.grace); got != b.began {
					t.Fatalf("Begin #%d reported %v, want %v", i+1, got, b.began)
				}
			}
			if !s.Terminating || !s.Ending() {
				t.Fatalf("after Begin: Terminating %v, Ending %v; want both", s.Terminating, s.Ending())
			}
			if want := t0.Add(tc.wantDeadline); !s.Deadline.Equal(want) {
				t.Errorf("Deadline = %s, want %s", s.Deadline, want)
			}
			if s.Seconds != tc.wantSeconds {
				t.Errorf("Seconds = %d, want %d", s.Seconds, tc.wantSeconds)
			}
			if s.Forced != tc.wantForced {
				t.Errorf("Forced = %v, want %v", s.Forced, tc.wantForced)
			}
		})
	}
}

func TestCompleteGivesTheSidecarsAGracePeriodWithoutForcing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		grace time.Duration
	}{
		{"the pod's grace period", 30 * time.Second},
		{"0 does not force", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s State
			if s.Ending() {
				t.Fatal("the zero State is Ending")
			}
			s.Complete(t0, tc.grace)
			if !s.Completed || !s.Ending() || s.Terminating || s.Forced {
				t.Fatalf("after Complete: %+v", s)
			}
			if want := t0.Add(tc.grace); !s.Deadline.Equal(want) {
				t.Fatalf("Deadline = %s, want %s", s.Deadline, want)
			}
		})
	}
}

func TestADeletionAfterCompletionSetsItsOwnDeadline(t *testing.T) {
	t.Parallel()
	var s State
	s.Complete(t0, 5*time.Second)
	if !s.Begin(t0.Add(time.Second), 30*time.Second) {
		t.Fatal("Begin on a completed pod reported false: its termination had not begun")
	}
	if want := t0.Add(31 * time.Second); !s.Deadline.Equal(want) || s.Seconds != 30 {
		t.Fatalf("Deadline %s, Seconds %d; want %s, 30", s.Deadline, s.Seconds, want)
	}
}

func TestRemainingIsWhatIsLeftOfTheGracePeriod(t *testing.T) {
	t.Parallel()
	var s State
	s.Begin(t0, 10*time.Second)
	for _, tc := range []struct {
		name string
		at   time.Duration
		want time.Duration
	}{
		{"at the start, all of it", 0, 10 * time.Second},
		{"part way", 4 * time.Second, 6 * time.Second},
		{"at the deadline, none", 10 * time.Second, 0},
		{"past the deadline, none (never negative)", 15 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := s.Remaining(t0.Add(tc.at)); got != tc.want {
				t.Fatalf("Remaining = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestStopOrderRegularContainersFirstThenSidecarsLastFirst(t *testing.T) {
	t.Parallel()
	var (
		sidecar         = Container{Sidecar: true, Running: true}
		sidecarStopping = Container{Sidecar: true, Running: true, Stopping: true}
		sidecarGone     = Container{Sidecar: true}
		main            = Container{Running: true}
		mainStopping    = Container{Running: true, Stopping: true}
		mainGone        = Container{}
	)
	for _, tc := range []struct {
		name        string
		cs          []Container
		wantStop    []int
		wantRunning bool
	}{
		{"nothing runs: done", []Container{sidecarGone, mainGone}, nil, false},
		{"no containers: done", nil, nil, false},
		{"every running main container stops at once, sidecars wait",
			[]Container{sidecar, sidecar, main, main, mainGone}, []int{2, 3}, true},
		{"a main container already stopping is not stopped again",
			[]Container{sidecar, mainStopping, main}, []int{2}, true},
		{"sidecars wait while a main container is still stopping",
			[]Container{sidecar, mainStopping}, nil, true},
		{"a running regular init container stops with the main containers",
			[]Container{sidecar, {Running: true}, mainGone}, []int{1}, true},
		{"once the main containers are gone the last sidecar stops",
			[]Container{sidecar, sidecar, mainGone}, []int{1}, true},
		{"the sidecar before it waits while the last one is stopping",
			[]Container{sidecar, sidecarStopping, mainGone}, nil, true},
		{"then the one before it stops",
			[]Container{sidecar, sidecarGone, mainGone}, []int{0}, true},
		{"a regular init container between sidecars does not count as one",
			[]Container{sidecar, {}, sidecarGone, mainGone}, []int{0}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop, running := Stop(tc.cs)
			if !slices.Equal(stop, tc.wantStop) || running != tc.wantRunning {
				t.Fatalf("Stop = %v, %v; want %v, %v", stop, running, tc.wantStop, tc.wantRunning)
			}
		})
	}
}

func TestProbeKillGraceIsTheProbesOwnElseThePods(t *testing.T) {
	t.Parallel()
	ten, three, zero := int64(10), int64(3), int64(0)
	withGrace := corev1.PodSpec{TerminationGracePeriodSeconds: &ten}
	for _, tc := range []struct {
		name       string
		spec       corev1.PodSpec
		probeGrace *int64
		want       time.Duration
	}{
		{"the probe's own wins", withGrace, &three, 3 * time.Second},
		{"the probe's 0 is 0", withGrace, &zero, 0},
		{"without one, the pod's", withGrace, nil, 10 * time.Second},
		{"without either, 30s", corev1.PodSpec{}, nil, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ProbeKillGrace(&tc.spec, tc.probeGrace); got != tc.want {
				t.Fatalf("ProbeKillGrace = %s, want %s", got, tc.want)
			}
		})
	}
}

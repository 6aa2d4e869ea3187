package restart

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestShouldFollowsRestartPolicyAndContainerKind(t *testing.T) {
	t.Parallel()
	const (
		always    = corev1.RestartPolicyAlways
		onFailure = corev1.RestartPolicyOnFailure
		never     = corev1.RestartPolicyNever
	)
	for _, tc := range []struct {
		name      string
		policy    corev1.RestartPolicy
		kind      Kind
		exitCode  int32
		probeKill bool
		want      bool
	}{
		{"Always restarts a main container that succeeded", always, Main, 0, false, true},
		{"Always restarts a main container that failed", always, Main, 1, false, true},
		{"an empty policy is Always", "", Main, 0, false, true},
		{"OnFailure restarts a failure", onFailure, Main, 2, false, true},
		{"OnFailure leaves a success", onFailure, Main, 0, false, false},
		{"OnFailure counts a probe's kill as a failure whatever the exit code", onFailure, Main, 0, true, true},
		{"Never restarts nothing", never, Main, 1, false, false},
		{"Never restarts nothing, not even after a probe's kill", never, Main, 137, true, false},
		{"a native sidecar restarts under Never", never, Sidecar, 0, false, true},
		{"a native sidecar restarts after a success", onFailure, Sidecar, 0, false, true},
		{"a regular init container that failed restarts under Always", always, Init, 1, false, true},
		{"a regular init container that failed restarts under OnFailure", onFailure, Init, 1, false, true},
		{"a regular init container that failed does not under Never", never, Init, 1, false, false},
		{"a regular init container that succeeded never restarts", always, Init, 0, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Should(tc.policy, tc.kind, tc.exitCode, tc.probeKill); got != tc.want {
				t.Fatalf("Should(%q, %v, %d, %v) = %v, want %v", tc.policy, tc.kind, tc.exitCode, tc.probeKill, got, tc.want)
			}
		})
	}
}

func TestBackOffIsSeenInTheKubeletsWords(t *testing.T) {
	t.Parallel()
	waiting, event := backOff("web", "default", "u-1", "app", 20*time.Second)
	if waiting.Reason != "CrashLoopBackOff" {
		t.Errorf("reason %q, want CrashLoopBackOff", waiting.Reason)
	}
	if want := "back-off 20s restarting failed container=app pod=web_default(u-1)"; waiting.Message != want {
		t.Errorf("message %q, want %q", waiting.Message, want)
	}
	if want := "Back-off restarting failed container app in pod web_default(u-1)"; event != want {
		t.Errorf("event %q, want %q", event, want)
	}
}

func TestProbeKillSaysWhetherTheContainerWillBeRestarted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		probe  string
		policy corev1.RestartPolicy
		kind   Kind
		want   string
	}{
		{"liveness under Always", "Liveness", corev1.RestartPolicyAlways, Main, "Container app failed liveness probe, will be restarted"},
		{"startup under OnFailure", "Startup", corev1.RestartPolicyOnFailure, Main, "Container app failed startup probe, will be restarted"},
		{"under Never it is not", "Liveness", corev1.RestartPolicyNever, Main, "Container app failed liveness probe"},
		{"a native sidecar is, even under Never", "Liveness", corev1.RestartPolicyNever, Sidecar, "Container app failed liveness probe, will be restarted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ProbeKill("app", tc.probe, tc.policy, tc.kind); got != tc.want {
				t.Fatalf("ProbeKill = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestHistoryCountsRestartsAndHoldsBackCrashLoops(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	who := Who{Pod: "web", Namespace: "default", UID: "u-1", Container: "app"}
	ended := func(code int32, ran time.Duration, at time.Duration) corev1.ContainerStateTerminated {
		return corev1.ContainerStateTerminated{ExitCode: code,
			StartedAt: metav1.NewTime(t0.Add(at - ran)), FinishedAt: metav1.NewTime(t0.Add(at))}
	}
	type step struct {
		start     bool // Start; else End with these:
		term      corev1.ContainerStateTerminated
		restarts  bool
		wantEvent bool
	}
	for _, tc := range []struct {
		name          string
		kind          Kind
		steps         []step
		wantRestarts  int32
		wantDone      bool
		wantSucceeded bool
		wantWaiting   bool
		wantNotBefore time.Duration // after t0
		wantLastExit  *int32        // the last state's exit code
		wantTermExit  *int32        // the current terminated state's exit code
	}{
		{"a first instance is no restart", Main,
			[]step{{start: true}}, 0, false, false, false, 0, nil, nil},
		{"the first restart is at once, without a BackOff event", Main,
			[]step{{start: true}, {term: ended(1, time.Second, time.Second), restarts: true}},
			0, false, false, false, time.Second, i32(1), nil},
		{"the second death waits 10s as CrashLoopBackOff", Main,
			[]step{{start: true}, {term: ended(1, time.Second, time.Second), restarts: true}, {start: true},
				{term: ended(2, time.Second, 2*time.Second), restarts: true, wantEvent: true}},
			1, false, false, true, 12 * time.Second, i32(2), nil},
		{"a new instance ends the waiting", Main,
			[]step{{start: true}, {term: ended(1, time.Second, time.Second), restarts: true}, {start: true},
				{term: ended(2, time.Second, 2*time.Second), restarts: true, wantEvent: true}, {start: true}},
			2, false, false, false, 12 * time.Second, i32(2), nil},
		{"an end for good is the current state, and Done", Main,
			[]step{{start: true}, {term: ended(3, time.Second, time.Second), restarts: false}},
			0, true, false, false, 0, nil, i32(3)},
		{"a regular init container that exited 0 succeeded", Init,
			[]step{{start: true}, {term: ended(0, time.Second, time.Second), restarts: false}},
			0, true, true, false, 0, nil, i32(0)},
		{"a sidecar that exited 0 and stops for good did not succeed", Sidecar,
			[]step{{start: true}, {term: ended(0, time.Second, time.Second), restarts: false}},
			0, true, false, false, 0, nil, i32(0)},
		{"a finished instance started again becomes the last state", Main,
			[]step{{start: true}, {term: ended(4, time.Second, time.Second), restarts: false}, {start: true}},
			1, true, false, false, 0, i32(4), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h History
			for i, s := range tc.steps {
				if s.start {
					h.Start()
					continue
				}
				event := h.End(s.term, tc.kind, s.restarts, who)
				if (event != "") != s.wantEvent {
					t.Fatalf("step %d: End event %q, want one: %v", i+1, event, s.wantEvent)
				}
			}
			if !h.Created || h.RestartCount != tc.wantRestarts || h.Done != tc.wantDone || h.Succeeded != tc.wantSucceeded {
				t.Fatalf("Created %v RestartCount %d Done %v Succeeded %v; want true %d %v %v",
					h.Created, h.RestartCount, h.Done, h.Succeeded, tc.wantRestarts, tc.wantDone, tc.wantSucceeded)
			}
			if (h.Waiting != nil) != tc.wantWaiting || (h.Waiting != nil && h.Waiting.Reason != "CrashLoopBackOff") {
				t.Fatalf("Waiting %+v, want CrashLoopBackOff: %v", h.Waiting, tc.wantWaiting)
			}
			if tc.wantNotBefore != 0 && !h.NotBefore.Equal(t0.Add(tc.wantNotBefore)) {
				t.Fatalf("NotBefore %s, want %s", h.NotBefore, t0.Add(tc.wantNotBefore))
			}
			if got := exitOf(h.LastState.Terminated); !equalPtr(got, tc.wantLastExit) {
				t.Fatalf("last state's exit %v, want %v", deref(got), deref(tc.wantLastExit))
			}
			if got := exitOf(h.Terminated); !equalPtr(got, tc.wantTermExit) {
				t.Fatalf("terminated exit %v, want %v", deref(got), deref(tc.wantTermExit))
			}
		})
	}
}

func i32(v int32) *int32 { return &v }

func exitOf(t *corev1.ContainerStateTerminated) *int32 {
	if t == nil {
		return nil
	}
	return &t.ExitCode
}

func equalPtr(a, b *int32) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func deref(p *int32) any {
	if p == nil {
		return "none"
	}
	return *p
}

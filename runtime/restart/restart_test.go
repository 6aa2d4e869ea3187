package restart

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	waiting, event := BackOff("web", "default", "u-1", "app", 20*time.Second)
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

package kubewatch

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/record"
)

func TestProbeFactsAreReadOutOfTheKubeletsProbeEvents(t *testing.T) {
	for _, tc := range []struct {
		reason, message string
		want            record.Probe
		ok              bool
	}{
		{"Unhealthy", "Liveness probe failed: HTTP probe failed with statuscode: 500", record.Probe{Probe: "liveness", Result: "failure", Message: "HTTP probe failed with statuscode: 500"}, true},
		{"Unhealthy", "Readiness probe errored and resulted in unknown state: rpc error: code = Unknown", record.Probe{Probe: "readiness", Result: "error", Message: "rpc error: code = Unknown"}, true},
		{"ProbeWarning", "Startup probe warning: Probe terminated redirects", record.Probe{Probe: "startup", Result: "warning", Message: "Probe terminated redirects"}, true},
		{"Unhealthy", "Liveness probe failed: ", record.Probe{Probe: "liveness", Result: "failure"}, true},
		{"Killing", "Container app failed liveness probe, will be restarted", record.Probe{}, false},
		{"Unhealthy", "Lifecycle hook failed: boom", record.Probe{}, false},
		{"Unhealthy", "Liveness probe", record.Probe{}, false},
	} {
		got, ok := probeOf(tc.reason, tc.message)
		if ok != tc.ok || got != tc.want {
			t.Errorf("probeOf(%q, %q) = %+v, %t; want %+v, %t", tc.reason, tc.message, got, ok, tc.want, tc.ok)
		}
	}
}

func TestTheContainerOfAnEventIsItsFieldPaths(t *testing.T) {
	for path, want := range map[string]string{
		"spec.containers{app}":            "app",
		"spec.initContainers{podgate}":    "podgate",
		"spec.ephemeralContainers{debug}": "debug",
		"":                                "",
		"spec.containers[0]":              "",
		"spec.containers{unterminated":    "",
		"spec.containers{a}.b{c}":         "",
		"spec.ephemeralContainers{}":      "",
		"status.containerStatuses{app}":   "",
	} {
		if got := containerOf(path); got != want {
			t.Errorf("containerOf(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestAnEventsTimeIsItsOwnOnlyWhenPrecise(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	precise := metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 4, 123456000, time.UTC))
	seconds := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 4, 0, time.UTC))
	for _, tc := range []struct {
		name string
		e    corev1.Event
		want time.Time
	}{
		{"a core/v1 event with lastTimestamp only: observed", corev1.Event{Count: 3, LastTimestamp: seconds}, now},
		{"a first occurrence with eventTime: its own", corev1.Event{Count: 1, EventTime: precise}, precise.Time},
		{"a repeat whose eventTime is the first occurrence: observed", corev1.Event{Count: 2, EventTime: precise}, now},
		{"a series: its last observation", corev1.Event{EventTime: metav1.NewMicroTime(now.Add(-time.Hour)), Series: &corev1.EventSeries{Count: 4, LastObservedTime: precise}}, precise.Time},
	} {
		if got := eventTime(&tc.e, now); !got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAContainerStatusChangesOnlyWhenAFieldDoes(t *testing.T) {
	yes, no := true, false
	running := corev1.ContainerStatus{Name: "app", Started: &yes, Ready: true, RestartCount: 1, ContainerID: "x://1",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	base := containerState(running, false)
	if base.State != "running" || !base.Ready || base.RestartCount != 1 || *base.Started != true || base.ExitCode != nil {
		t.Fatalf("running: %+v", base)
	}
	for _, tc := range []struct {
		name   string
		change func(*corev1.ContainerStatus)
		same   bool
	}{
		{"nothing", func(*corev1.ContainerStatus) {}, true},
		{"a fresh Started pointer with the same value", func(c *corev1.ContainerStatus) { v := true; c.Started = &v }, true},
		{"started", func(c *corev1.ContainerStatus) { c.Started = &no }, false},
		{"ready", func(c *corev1.ContainerStatus) { c.Ready = false }, false},
		{"restart count", func(c *corev1.ContainerStatus) { c.RestartCount = 2 }, false},
		{"terminated", func(c *corev1.ContainerStatus) {
			c.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}}
		}, false},
		{"waiting", func(c *corev1.ContainerStatus) {
			c.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
		}, false},
	} {
		c := running
		tc.change(&c)
		if got := sameState(base, containerState(c, false)); got != tc.same {
			t.Errorf("%s: same = %t, want %t", tc.name, got, tc.same)
		}
	}
	term := running
	term.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "boom"}}
	st := containerState(term, true)
	if st.State != "terminated" || *st.ExitCode != 1 || st.Reason != "Error" || st.Message != "boom" || !st.Sidecar {
		t.Errorf("terminated sidecar: %+v", st)
	}
	a, b := containerState(term, false), containerState(term, false)
	*b.ExitCode = 2
	if sameState(a, b) {
		t.Error("exit codes 1 and 2 compare the same")
	}
}

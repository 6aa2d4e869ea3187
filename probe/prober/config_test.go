package prober

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/probe"
)

func i64(v int64) *int64 { return &v }

func TestConfigDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind Kind
		in   corev1.Probe
		want Config
	}{
		{"zero fields take the defaults", Readiness, corev1.Probe{},
			Config{Period: 10 * time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3}},
		{"set fields are kept", Readiness, corev1.Probe{InitialDelaySeconds: 5, PeriodSeconds: 2, TimeoutSeconds: 4, SuccessThreshold: 2, FailureThreshold: 7},
			Config{InitialDelay: 5 * time.Second, Period: 2 * time.Second, Timeout: 4 * time.Second, SuccessThreshold: 2, FailureThreshold: 7}},
		{"liveness grace override is kept", Liveness, corev1.Probe{TerminationGracePeriodSeconds: i64(9)},
			Config{Period: 10 * time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3, TerminationGracePeriodSeconds: i64(9)}},
		{"startup success threshold 1 is fine", Startup, corev1.Probe{SuccessThreshold: 1},
			Config{Period: 10 * time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NewConfig(tc.kind, &tc.in)
			if err != nil {
				t.Fatal(err)
			}
			g, w := got, tc.want
			if (g.TerminationGracePeriodSeconds == nil) != (w.TerminationGracePeriodSeconds == nil) ||
				(g.TerminationGracePeriodSeconds != nil && *g.TerminationGracePeriodSeconds != *w.TerminationGracePeriodSeconds) {
				t.Fatalf("grace = %v, want %v", g.TerminationGracePeriodSeconds, w.TerminationGracePeriodSeconds)
			}
			g.TerminationGracePeriodSeconds, w.TerminationGracePeriodSeconds = nil, nil
			if g != w {
				t.Fatalf("NewConfig = %+v, want %+v", g, w)
			}
		})
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind Kind
		in   *corev1.Probe
		want string
	}{
		{"liveness successThreshold must be 1", Liveness, &corev1.Probe{SuccessThreshold: 2},
			"livenessProbe.successThreshold: Invalid value: 2: must be 1 for liveness and startup probes"},
		{"startup successThreshold must be 1", Startup, &corev1.Probe{SuccessThreshold: 3},
			"startupProbe.successThreshold: Invalid value: 3: must be 1 for liveness and startup probes"},
		{"negative period", Readiness, &corev1.Probe{PeriodSeconds: -1},
			"readinessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0"},
		{"negative initial delay", Readiness, &corev1.Probe{InitialDelaySeconds: -5},
			"readinessProbe.initialDelaySeconds: Invalid value: -5: must be greater than or equal to 0"},
		{"negative failure threshold", Liveness, &corev1.Probe{FailureThreshold: -3},
			"livenessProbe.failureThreshold: Invalid value: -3: must be greater than or equal to 0"},
		{"grace override on readiness", Readiness, &corev1.Probe{TerminationGracePeriodSeconds: i64(5)},
			"readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readiness probes"},
		{"grace override of 0", Liveness, &corev1.Probe{TerminationGracePeriodSeconds: i64(0)},
			"livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0"},
		{"nil probe", Readiness, nil, "readinessProbe: Required value"},
		{"bad kind", Kind(7), &corev1.Probe{}, "unknown probe kind 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewConfig(tc.kind, tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestNewManagerRejectsBadProbes(t *testing.T) {
	ok := func(context.Context) probe.Outcome { return success }
	for _, tc := range []struct {
		name   string
		probes []Probe
		want   []string
	}{
		{"duplicate probe", []Probe{
			{Container: "web", Kind: Readiness, Spec: &corev1.Probe{}, Attempt: ok},
			{Container: "web", Kind: Readiness, Spec: &corev1.Probe{}, Attempt: ok},
		}, []string{`container "web": readinessProbe: duplicate probe`}},
		{"no attempt function", []Probe{{Container: "web", Kind: Liveness, Spec: &corev1.Probe{}}},
			[]string{`container "web": livenessProbe: no attempt function`}},
		{"no container name", []Probe{{Kind: Liveness, Spec: &corev1.Probe{}, Attempt: ok}},
			[]string{`probes[0]: container name is empty`}},
		{"every error is reported", []Probe{
			{Container: "web", Kind: Liveness, Spec: &corev1.Probe{SuccessThreshold: 2}, Attempt: ok},
			{Container: "side", Kind: Startup, Spec: nil, Attempt: ok},
		}, []string{
			`container "web": livenessProbe.successThreshold: Invalid value: 2`,
			`container "side": startupProbe: Required value`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewManager(tc.probes, Options{})
			if err == nil {
				m.Stop()
				t.Fatal("NewManager accepted bad probes")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestNewManagerWithoutProbesOrOptions(t *testing.T) {
	m, err := NewManager(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	m.ContainerStarted("web", "c1", time.Now())
	if !m.Ready("web") || !m.Started("web") {
		t.Fatal("a container without probes is Ready and Started once running")
	}
}

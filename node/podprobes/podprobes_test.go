package podprobes

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/probe"
	"github.com/podgate/podgate/probe/prober"
)

func httpProbe(path string, port, period int32) *corev1.Probe {
	return &corev1.Probe{PeriodSeconds: period, ProbeHandler: corev1.ProbeHandler{
		HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(port)}}}
}

func TestOf(t *testing.T) {
	t.Parallel()
	routed := httpProbe(contract.ProbePath("app", contract.Liveness), contract.GateAdminPort, 10)
	for _, tc := range []struct {
		name       string
		c          corev1.Container
		gated      bool
		wantKinds  []prober.Kind
		wantHeader string // the message header the probes' target carries
		wantPeriod int32  // the period of the first probe
	}{
		{"no probes, none to run", corev1.Container{Name: "app"}, false, nil, "", 0},
		{"readiness, liveness and startup in that order", corev1.Container{Name: "app",
			ReadinessProbe: httpProbe("/r", 8080, 5), LivenessProbe: httpProbe("/l", 8080, 5), StartupProbe: httpProbe("/s", 8080, 5)},
			false, []prober.Kind{prober.Readiness, prober.Liveness, prober.Startup}, "", 5},
		{"a probe routed through the gate of a gated pod carries the original message", corev1.Container{Name: "app", LivenessProbe: routed},
			true, []prober.Kind{prober.Liveness}, contract.ProbeMessageHeader, 10},
		{"without the gate the same probe is the container's own", corev1.Container{Name: "app", LivenessProbe: routed},
			false, []prober.Kind{prober.Liveness}, "", 10},
		{"Knative's aggressive probing runs every second", corev1.Container{Name: "app", ReadinessProbe: httpProbe("/r", 8080, 0)},
			false, []prober.Kind{prober.Readiness}, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen []probe.Target
			var periods []int32
			bind := func(spec *corev1.Probe, target probe.Target) func(context.Context) probe.Outcome {
				return func(context.Context) probe.Outcome {
					seen = append(seen, target)
					periods = append(periods, spec.PeriodSeconds)
					return probe.Outcome{}
				}
			}
			ps := Of(&tc.c, probe.Target{PodIP: "127.0.1.7"}, tc.gated, bind)
			if len(ps) != len(tc.wantKinds) {
				t.Fatalf("%d probes, want %d", len(ps), len(tc.wantKinds))
			}
			for i, p := range ps {
				if p.Kind != tc.wantKinds[i] || p.Container != "app" {
					t.Errorf("probe %d: %s of %q, want %s of app", i, p.Kind, p.Container, tc.wantKinds[i])
				}
				p.Attempt(context.Background())
			}
			for _, target := range seen {
				if target.PodIP != "127.0.1.7" || target.MessageHeader != tc.wantHeader {
					t.Errorf("target %+v, want pod IP 127.0.1.7 and message header %q", target, tc.wantHeader)
				}
			}
			if len(ps) > 0 && (ps[0].Spec.PeriodSeconds != tc.wantPeriod || periods[0] != tc.wantPeriod) {
				t.Errorf("period %d (attempted with %d), want %d", ps[0].Spec.PeriodSeconds, periods[0], tc.wantPeriod)
			}
		})
	}
	// The pod's spec is not changed by the aggressive period.
	spec := httpProbe("/r", 8080, 0)
	Of(&corev1.Container{Name: "app", ReadinessProbe: spec}, probe.Target{}, false, probe.NewRunner().Bind)
	if spec.PeriodSeconds != 0 {
		t.Errorf("the spec's periodSeconds became %d", spec.PeriodSeconds)
	}
}

func TestRoutedThroughGate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		spec *corev1.Probe
		want bool
	}{
		{"the gate's probe path on its admin port", httpProbe(contract.ProbePath("app", contract.Startup), contract.GateAdminPort, 1), true},
		{"another path on the admin port", httpProbe("/healthz", contract.GateAdminPort, 1), false},
		{"the probe path on another port", httpProbe(contract.ProbePath("app", contract.Startup), 8080, 1), false},
		{"a probe with a host of its own", &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Host: "127.0.0.9", Path: contract.ProbePath("app", contract.Startup), Port: intstr.FromInt32(contract.GateAdminPort)}}}, false},
		{"not an httpGet probe", &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(contract.GateAdminPort)}}}, false},
	} {
		if got := RoutedThroughGate(tc.spec); got != tc.want {
			t.Errorf("%s: RoutedThroughGate = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestHasGate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want bool
	}{
		{"no gate", corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}, false},
		{"the gate as a container", corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}, {Name: contract.GateContainerName}}}, true},
		{"the gate as a native sidecar", corev1.PodSpec{InitContainers: []corev1.Container{{Name: contract.GateContainerName}}, Containers: []corev1.Container{{Name: "app"}}}, true},
	} {
		if got := HasGate(&tc.spec); got != tc.want {
			t.Errorf("%s: HasGate = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestNewManagerGivesTheRecordingEveryAttemptAndThePodTheRest: with a
// recording, every tick reaches it as Attempted, and the pod never hears
// those; without one there are none.
func TestNewManagerGivesTheRecordingEveryAttemptAndThePodTheRest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		recording bool
	}{
		{"with a recording", true},
		{"without one", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			var mu sync.Mutex
			var acted, recorded []prober.UpdateType
			act := func(u prober.Update) { mu.Lock(); acted = append(acted, u.Type); mu.Unlock() }
			var record func(prober.Update)
			if tc.recording {
				record = func(u prober.Update) { mu.Lock(); recorded = append(recorded, u.Type); mu.Unlock() }
			}
			ok := func(context.Context) probe.Outcome { return probe.Outcome{Result: probe.Success} }
			m, err := NewManager([]prober.Probe{{Container: "app", Kind: prober.Readiness,
				Spec: &corev1.Probe{PeriodSeconds: 1}, Attempt: ok}}, clk, act, record)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Stop()
			m.ContainerStarted("app", "c1", clk.Now())
			// Updates come from ticks, delivered on the Manager's
			// goroutine: step the fake clock until both have heard theirs.
			heard := func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(acted) > 0 && (!tc.recording || slices.Contains(recorded, prober.Attempted))
			}
			deadline := time.Now().Add(10 * time.Second)
			for !heard() {
				if time.Now().After(deadline) {
					t.Fatal("no update within 10s")
				}
				clk.Step(time.Second)
				time.Sleep(time.Millisecond)
			}
			m.Stop() // every update delivered
			mu.Lock()
			defer mu.Unlock()
			for _, typ := range acted {
				if typ == prober.Attempted {
					t.Fatal("the pod heard an Attempted update")
				}
			}
			if tc.recording && !slices.Contains(recorded, prober.Attempted) {
				t.Fatalf("the recording heard %v, no Attempted", recorded)
			}
			if !tc.recording && len(recorded) != 0 {
				t.Fatalf("recorded %v without a recording", recorded)
			}
		})
	}
}

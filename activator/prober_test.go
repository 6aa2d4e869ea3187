package activator

import (
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/gate/contract"
)

func TestHealthCheckRequest(t *testing.T) {
	h := newHarness(t, Config{})
	a := newGate(t, "a", true, nil)
	h.target.Update([]Pod{a.pod(true, false)})
	h.probed(1, a)
	a.mu.Lock()
	hdr, path := a.probeHdrs[0], a.paths[0]
	a.mu.Unlock()
	if path != "/healthz" || hdr.Get("K-Network-Probe") != "queue" || hdr.Get("User-Agent") != "Knative-Activator-Probe" {
		t.Fatalf("health check GET %s with %v, want /healthz, K-Network-Probe: queue, UA Knative-Activator-Probe", path, hdr)
	}
}

func TestHealthAnswers(t *testing.T) {
	tests := []struct {
		name      string
		ready     bool
		body      string
		wantReady bool
		wantErr   string
	}{
		{name: "200 queue is ready", ready: true, body: "queue", wantReady: true},
		{name: "200 with another body is not ready", ready: true, body: "ok", wantErr: `status 200, body "ok"`},
		{name: "503 shutting down is not ready", wantErr: `status 503, body "shutting down"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			a := newGate(t, "a", tc.ready, nil)
			a.body.Store(tc.body)
			h.target.Update([]Pod{a.pod(true, false)})
			h.probed(1, a)
			st := h.backend("a")
			if st.GateReady != tc.wantReady || !strings.Contains(st.LastError, tc.wantErr) {
				t.Fatalf("gate ready %v err %q, want %v and an error containing %q", st.GateReady, st.LastError, tc.wantReady, tc.wantErr)
			}
		})
	}
}

func TestHealthCheckTimeout(t *testing.T) {
	stuck := make(chan struct{})
	defer close(stuck)
	h := newHarness(t, Config{ProbeTimeout: 50 * time.Millisecond})
	a := newGate(t, "a", true, nil)
	a.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-stuck })
	h.target.Update([]Pod{a.pod(true, false)})
	waitFor(t, "health check timed out", func() bool { return h.backend("a").Probes >= 1 })
	if st := h.backend("a"); st.GateReady || !strings.Contains(st.LastError, "deadline exceeded") {
		t.Fatalf("a hung gate: %+v, want not ready with a deadline error", st)
	}
}

// One health check at once, then exactly one per interval: the prober's
// timing comes from the injected clock.
func TestHealthCheckInterval(t *testing.T) {
	const every = 5 * time.Second
	h := newHarness(t, Config{ProbeInterval: every})
	a := newGate(t, "a", true, nil)
	h.target.Update([]Pod{a.pod(true, false)})
	h.probed(1, a)
	for n := 2; n <= 4; n++ {
		h.clock.Step(every - time.Millisecond)
		h.clock.Step(time.Millisecond)
		h.probed(n, a)
	}
	// Half an interval brings nothing new; the rest of it brings one.
	h.clock.Step(every / 2)
	h.clock.Step(every / 2)
	h.probed(5, a)
	if got := a.probes.Load(); got != 5 {
		t.Fatalf("%d health checks after 4 intervals, want 5", got)
	}
}

func TestTerminatingPodIsNotProbed(t *testing.T) {
	h := newHarness(t, Config{})
	a, b := newGate(t, "a", true, nil), newGate(t, "b", true, nil)
	pa := a.pod(true, false)
	pa.Terminating = true
	h.target.Update([]Pod{pa, b.pod(true, false)})
	h.probed(1, b)
	h.clock.Step(DefaultProbeInterval)
	h.probed(2, b)
	if a.probes.Load() != 0 {
		t.Fatalf("terminating pod was health checked %d times", a.probes.Load())
	}
}

func TestFastPathAllowed(t *testing.T) {
	exec := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/ready"}}}}
	httpProbe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/"}}}
	always := corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name string
		spec *corev1.PodSpec
		want bool
	}{
		{"no spec: not allowed", nil, false},
		{"no probes: allowed", &corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}, true},
		{"http readiness everywhere: allowed", &corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", ReadinessProbe: httpProbe}, {Name: "side", ReadinessProbe: httpProbe}}}, true},
		{"exec readiness on the serving container: not allowed", &corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", ReadinessProbe: exec}}}, false},
		{"exec readiness on a sidecar container: not allowed (Knative allows it)", &corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", ReadinessProbe: httpProbe}, {Name: "side", ReadinessProbe: exec}}}, false},
		{"exec readiness on a native sidecar: not allowed", &corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "side", RestartPolicy: &always, ReadinessProbe: exec}},
			Containers:     []corev1.Container{{Name: "app"}}}, false},
		{"startup probe on a sidecar: not allowed", &corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app"}, {Name: "side", StartupProbe: httpProbe}}}, false},
		{"exec liveness only: allowed (liveness is not readiness)", &corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", LivenessProbe: exec}}}, true},
		{"readiness gates: not allowed", &corev1.PodSpec{
			Containers:     []corev1.Container{{Name: "app"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}}}, false},
		{"the gate's own readiness gate: allowed (the gate writes that condition from what it answers)", &corev1.PodSpec{
			Containers:     []corev1.Container{{Name: "app"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: contract.ContainersReadyCondition}}}, true},
		{"the gate's and another readiness gate: not allowed", &corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: contract.ContainersReadyCondition},
				{ConditionType: "example.com/lb"}}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := FastPathAllowed(tc.spec); got != tc.want {
				t.Fatalf("FastPathAllowed = %v, want %v", got, tc.want)
			}
		})
	}
}

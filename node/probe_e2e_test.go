package node

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podgate/podgate/node/events"
)

// The kubelet's own end-to-end probe tests (test/e2e/common/node/
// container_probe.go), as behaviours of the node agent with real processes:
// the test app and /bin/sh. Periods are 1 s; a "never" is observed over a
// number of probe runs counted from what the probes leave behind (events,
// the app's log lines), not over a sleep. Liveness probes wait behind a
// startup probe, as a slow-starting app needs: on a loaded machine the test
// app can take seconds to listen, and a liveness probe that fails then is
// right to restart it — but that is not the behaviour under test.

func podYAML(name, body string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
%s`, name, body)
}

func TestProbeRestartBehaviours(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		spec func(dir string) string
		// check runs once the container has restarted (or, for
		// wantRestart false, while it has not).
		wantRestart bool
		// noRestartAfter: how to know enough probes ran (wantRestart false).
		noRestartAfter func(h *harness)
		check          func(t *testing.T, h *harness, p *corev1.Pod)
	}{
		{
			name:        "restarted with a failing exec liveness probe",
			wantRestart: true,
			spec: func(dir string) string {
				return fmt.Sprintf(`  containers:
  - name: c
    image: busybox
    command: ["/bin/sh", "-c", "echo ok > %[1]s/health; sleep 1; rm -f %[1]s/health; sleep 600"]
    livenessProbe:
      exec: {command: ["cat", "%[1]s/health"]}
      initialDelaySeconds: 1
      periodSeconds: 1
      failureThreshold: 1
`, dir)
			},
			check: func(t *testing.T, h *harness, p *corev1.Pod) {
				h.waitEvent("probe", events.ReasonKilling, "Container c failed liveness probe, will be restarted")
				h.waitEvent("probe", events.ReasonUnhealthy, "Liveness probe failed: cat: ")
			},
		},
		{
			name: "not restarted with a passing exec liveness probe",
			spec: func(dir string) string {
				return fmt.Sprintf(`  containers:
  - name: c
    image: busybox
    command: ["/bin/sh", "-c", "echo ok > %[1]s/health; sleep 600"]
    livenessProbe:
      exec: {command: ["/bin/sh", "-c", "echo run >> %[1]s/runs; cat %[1]s/health"]}
      periodSeconds: 1
      failureThreshold: 1
    startupProbe:
      exec: {command: ["cat", "%[1]s/health"]}
      periodSeconds: 1
      failureThreshold: 120
    readinessProbe:
      exec: {command: ["/bin/sh", "-c", "echo readiness"]}
      periodSeconds: 1
`, dir)
			},
			noRestartAfter: func(h *harness) { h.waitFileLines(filepath.Join(h.dir, "runs"), 5) },
		},
		{
			name:        "restarted with a failing /healthz HTTP liveness probe",
			wantRestart: true,
			spec: func(string) string {
				return `  containers:
  - name: c
    image: ghcr.io/podgate/testapp
    args: ["--port", "8080", "--fail-live-after", "1s"]
    livenessProbe:
      httpGet: {path: /healthz, port: 8080}
      periodSeconds: 1
      failureThreshold: 1
    startupProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
      failureThreshold: 120
`
			},
			check: func(t *testing.T, h *harness, p *corev1.Pod) {
				h.waitEvent("probe", events.ReasonUnhealthy, "Liveness probe failed: HTTP probe failed with statuscode: 500")
			},
		},
		{
			name: "not restarted with a passing TCP liveness probe",
			spec: func(string) string {
				return `  containers:
  - name: c
    image: ghcr.io/podgate/testapp
    args: ["--port", "8080"]
    livenessProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
      failureThreshold: 1
    startupProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
      failureThreshold: 120
    readinessProbe:
      httpGet: {path: /readyz, port: 8080}
      periodSeconds: 1
`
			},
			// Readiness runs at the same period: its log lines count the
			// liveness runs too.
			noRestartAfter: func(h *harness) { h.waitOutputCount("probe", "Readiness probe called", 5) },
		},
		{
			name:        "exec liveness probe with a timeout restarts",
			wantRestart: true,
			spec: func(string) string {
				return `  containers:
  - name: c
    image: busybox
    command: ["/bin/sh", "-c", "sleep 600"]
    livenessProbe:
      exec: {command: ["/bin/sh", "-c", "sleep 10"]}
      periodSeconds: 1
      timeoutSeconds: 1
      failureThreshold: 1
`
			},
			check: func(t *testing.T, h *harness, p *corev1.Pod) {
				h.waitEvent("probe", events.ReasonUnhealthy, `Liveness probe failed: command timed out`)
			},
		},
		{
			name:        "local redirect liveness probe restarts on failure",
			wantRestart: true,
			spec: func(string) string {
				return `  containers:
  - name: c
    image: ghcr.io/podgate/testapp
    args: ["--port", "8080", "--fail-live-after", "1s"]
    livenessProbe:
      httpGet: {path: "/redirect?loc=%2Fhealthz", port: 8080}
      periodSeconds: 1
      failureThreshold: 1
    startupProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
      failureThreshold: 120
`
			},
			check: func(t *testing.T, h *harness, p *corev1.Pod) {
				h.waitEvent("probe", events.ReasonUnhealthy, "HTTP probe failed with statuscode: 500")
			},
		},
		{
			name: "non-local redirect liveness probe does not restart",
			spec: func(string) string {
				return `  containers:
  - name: c
    image: ghcr.io/podgate/testapp
    args: ["--port", "8080", "--fail-live-after", "1s"]
    livenessProbe:
      httpGet: {path: "/redirect?loc=http%3A%2F%2Flocalhost%3A1%2Fhealthz", port: 8080}
      periodSeconds: 1
      failureThreshold: 1
    startupProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
      failureThreshold: 120
`
			},
			// The redirect to another host is not followed: a warning, i.e.
			// a success, every period.
			noRestartAfter: func(h *harness) {
				h.waitEventCount("probe", events.ReasonProbeWarning, "Liveness probe warning: Probe terminated redirects", 5)
			},
		},
		{
			name:        "startup probe failing restarts",
			wantRestart: true,
			spec: func(string) string {
				return `  containers:
  - name: c
    image: busybox
    command: ["/bin/sh", "-c", "sleep 600"]
    livenessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
      failureThreshold: 1
    startupProbe:
      exec: {command: ["false"]}
      periodSeconds: 1
      failureThreshold: 3
`
			},
			check: func(t *testing.T, h *harness, p *corev1.Pod) {
				h.waitEvent("probe", events.ReasonKilling, "Container c failed startup probe, will be restarted")
			},
		},
		{
			name: "liveness is held off by the startup probe",
			spec: func(dir string) string {
				return fmt.Sprintf(`  containers:
  - name: c
    image: busybox
    command: ["/bin/sh", "-c", "sleep 600"]
    livenessProbe:
      exec: {command: ["false"]}
      periodSeconds: 1
      failureThreshold: 1
    startupProbe:
      exec: {command: ["cat", "%s/started"]}
      periodSeconds: 1
      failureThreshold: 60
`, dir)
			},
			noRestartAfter: func(h *harness) {
				h.waitEventCount("probe", events.ReasonUnhealthy, "Startup probe failed", 5)
			},
			check: func(t *testing.T, h *harness, p *corev1.Pod) {
				if n := h.eventCount("probe", events.ReasonUnhealthy, "Liveness"); n != 0 {
					t.Errorf("%d liveness failures while the startup probe had not passed, want none", n)
				}
				if cs := containerStatus(p, "c"); cs.Started == nil || *cs.Started {
					t.Errorf("started = %v, want false", cs.Started)
				}
			},
		},
		{
			name:        "gRPC liveness probe restarts when not serving",
			wantRestart: true,
			spec: func(string) string {
				return `  containers:
  - name: c
    image: ghcr.io/podgate/testapp
    args: ["--port", "8080", "--grpc-port", "9090", "--fail-live-after", "1s"]
    livenessProbe:
      grpc: {port: 9090, service: liveness}
      periodSeconds: 1
      failureThreshold: 1
    startupProbe:
      tcpSocket: {port: 9090}
      periodSeconds: 1
      failureThreshold: 120
`
			},
			check: func(t *testing.T, h *harness, p *corev1.Pod) {
				h.waitEvent("probe", events.ReasonUnhealthy, "Liveness probe failed: ")
			},
		},
		{
			name: "gRPC liveness probe does not restart while serving",
			spec: func(string) string {
				return `  containers:
  - name: c
    image: ghcr.io/podgate/testapp
    args: ["--port", "8080", "--grpc-port", "9090"]
    livenessProbe:
      grpc: {port: 9090, service: liveness}
      periodSeconds: 1
      failureThreshold: 1
    startupProbe:
      tcpSocket: {port: 9090}
      periodSeconds: 1
      failureThreshold: 120
    readinessProbe:
      httpGet: {path: /readyz, port: 8080}
      periodSeconds: 1
`
			},
			noRestartAfter: func(h *harness) { h.waitOutputCount("probe", "Readiness probe called", 5) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.dir = t.TempDir()
			h.start(podYAML("probe", tc.spec(h.dir)))
			var p *corev1.Pod
			if tc.wantRestart {
				p = h.restarted("probe", "c", 1)
			} else {
				h.waitPod("probe", "running", func(p *corev1.Pod) bool { return containerStatus(p, "c").State.Running != nil })
				tc.noRestartAfter(h)
				p = h.current("probe")
				if n := restarts(p, "c"); n != 0 {
					t.Fatalf("restartCount = %d, want 0; events: %v", n, h.events("probe", ""))
				}
				if n := len(h.events("probe", events.ReasonKilling)); n != 0 {
					t.Errorf("%d Killing events, want none", n)
				}
			}
			if tc.check != nil {
				tc.check(t, h, p)
			}
		})
	}
}

func TestRestartCountIncreasesMonotonically(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := t.Context()
	w, err := h.store.Pods.Watch(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen []int32
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w {
			if ev.Type == watch.Error || ev.Object == nil || ev.Object.Name != "probe" {
				continue
			}
			mu.Lock()
			seen = append(seen, restarts(ev.Object, "c"))
			mu.Unlock()
		}
	}()
	h.start(podYAML("probe", `  containers:
  - name: c
    image: ghcr.io/podgate/testapp
    args: ["--port", "8080", "--fail-live-after", "1s"]
    livenessProbe:
      httpGet: {path: /healthz, port: 8080}
      periodSeconds: 1
      failureThreshold: 1
    startupProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
      failureThreshold: 120
`))
	// The second restart comes after the 10 s back-off.
	h.restarted("probe", "c", 2)
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Fatalf("restartCount went from %d to %d: %v", seen[i-1], seen[i], seen)
		}
	}
	t.Cleanup(func() { <-done })
}

func TestReadinessProbeTiming(t *testing.T) {
	t.Parallel()
	t.Run("not ready before initialDelaySeconds and never restarted", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.start(podYAML("probe", `  containers:
  - name: c
    image: ghcr.io/podgate/testapp
    args: ["--port", "8080"]
    readinessProbe:
      httpGet: {path: /readyz, port: 8080}
      initialDelaySeconds: 3
      periodSeconds: 1
`))
		p := h.waitPod("probe", "ready", podReady)
		started := containerStatus(p, "c").State.Running.StartedAt.Time
		var readyAt time.Time
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				readyAt = c.LastTransitionTime.Time
			}
		}
		if d := readyAt.Sub(started); d < 3*time.Second {
			t.Errorf("ready %s after the container started, want at least the initial delay of 3s", d)
		}
		if n := restarts(p, "c"); n != 0 {
			t.Errorf("restartCount = %d, want 0", n)
		}
	})
	t.Run("failing readiness is never ready and never restarted", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.start(podYAML("probe", `  containers:
  - name: c
    image: busybox
    command: ["/bin/sh", "-c", "sleep 600"]
    readinessProbe:
      exec: {command: ["/bin/false"]}
      periodSeconds: 1
`))
		deadline := time.Now().Add(waitLimit)
		for h.eventCount("probe", events.ReasonUnhealthy, "Readiness probe failed") < 5 {
			if time.Now().After(deadline) {
				t.Fatal("readiness probe did not fail 5 times")
			}
			if p, err := h.store.Pods.Get("default", "probe"); err == nil && podReady(p) {
				t.Fatal("pod became ready")
			}
			time.Sleep(10 * time.Millisecond)
		}
		p := h.current("probe")
		if podReady(p) || restarts(p, "c") != 0 {
			t.Fatalf("ready=%v restartCount=%d, want not ready and no restart", podReady(p), restarts(p, "c"))
		}
		ep := endpointOf(h.slice("probe"), "probe")
		if ep == nil || *ep.Conditions.Ready || *ep.Conditions.Serving {
			t.Errorf("endpoint = %+v, want present, not ready, not serving", ep)
		}
	})
	t.Run("ready immediately after the startup probe succeeds", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		dir := t.TempDir()
		// Readiness every 60 s: only the run the startup success triggers
		// can make the pod ready within the wait.
		h.start(podYAML("probe", fmt.Sprintf(`  containers:
  - name: c
    image: busybox
    command: ["/bin/sh", "-c", "sleep 2; touch %s/started; sleep 600"]
    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 60
    startupProbe:
      exec: {command: ["cat", "%s/started"]}
      periodSeconds: 1
      failureThreshold: 60
`, dir, dir)))
		p := h.waitPod("probe", "started", func(p *corev1.Pod) bool {
			s := containerStatus(p, "c").Started
			return s != nil && *s
		})
		started := time.Now()
		h.waitPod("probe", "ready", podReady)
		if d := time.Since(started); d > 30*time.Second {
			t.Errorf("ready %s after the startup probe passed; the readiness probe should run at once, not after its 60s period", d)
		}
		_ = p
	})
}

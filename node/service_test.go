package node

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/local/servingv1"
)

// servingCount is a ServingView a test sets by hand: the front door's
// count is an input to the status rule, not something to fake a network
// for.
type servingCount struct {
	mu    sync.Mutex
	n     int
	known bool
}

func (s *servingCount) set(n int) {
	s.mu.Lock()
	s.n, s.known = n, true
	s.mu.Unlock()
}

func (s *servingCount) ServingPods(_, _ string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n, s.known
}

// wantCond is what one condition must show; an empty field is not checked.
type wantCond struct {
	status   corev1.ConditionStatus
	reason   string
	severity string
	message  string // substring
}

func (h *harness) waitService(name, what string, want map[string]wantCond) *servingv1.Service {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		svc, err := h.store.Services.Get("default", name)
		var mismatch string
		if err != nil {
			mismatch = err.Error()
		} else {
			for typ, w := range want {
				c := svc.Status.Condition(typ)
				switch {
				case c == nil:
					mismatch = typ + " missing"
				case c.Status != w.status, w.reason != "" && c.Reason != w.reason,
					c.Severity != w.severity, !strings.Contains(c.Message, w.message):
					mismatch = fmt.Sprintf("%s = %+v", typ, *c)
				}
			}
		}
		if mismatch == "" {
			return svc
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("service %s %s: %s (conditions %+v)", name, what, mismatch, svc.Status.Conditions)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestServiceStatusSaysWhatTrafficDoes(t *testing.T) {
	t.Run("a container that never turns ready leaves the revision missing and names the container", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.start(knativeTwoContainers("never", `exec: {command: ["false"]}`))
		h.waitService("never", "before any pod was ready", map[string]wantCond{
			"Ready":               {status: corev1.ConditionUnknown, reason: "RevisionMissing", message: "containers not ready: [sidecar]"},
			"RoutesReady":         {status: corev1.ConditionUnknown, reason: "RevisionMissing"},
			"ConfigurationsReady": {status: corev1.ConditionUnknown, reason: "RevisionMissing"},
		})
		svc, _ := h.store.Services.Get("default", "never")
		if svc.Status.LatestReadyRevisionName != "" || len(svc.Status.Traffic) != 0 {
			t.Errorf("a revision that was never ready is latestReady %q with traffic %+v", svc.Status.LatestReadyRevisionName, svc.Status.Traffic)
		}
	})

	t.Run("readiness lost after serving is no healthy backends, and back is ready", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		file := filepath.Join(t.TempDir(), "ready")
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		h.start(knativeTwoContainers("flip", fmt.Sprintf(`exec: {command: ["cat", %q]}`, file)))
		svc := h.waitService("flip", "once ready", map[string]wantCond{
			"Ready": {status: corev1.ConditionTrue}, "RoutesReady": {status: corev1.ConditionTrue},
			"ConfigurationsReady": {status: corev1.ConditionTrue}, "ContainerHealthy": {status: corev1.ConditionTrue},
		})
		if svc.Status.URL != "http://flip.default.example.com" || svc.Status.LatestReadyRevisionName != "flip-00001" {
			t.Errorf("url %q latestReady %q", svc.Status.URL, svc.Status.LatestReadyRevisionName)
		}
		if err := os.Remove(file); err != nil {
			t.Fatal(err)
		}
		h.waitService("flip", "after the sidecar turned unready", map[string]wantCond{
			"Ready":               {status: corev1.ConditionUnknown, reason: "NoHealthyBackends", message: "containers not ready: [sidecar]"},
			"RoutesReady":         {status: corev1.ConditionUnknown, reason: "NoHealthyBackends"},
			"ConfigurationsReady": {status: corev1.ConditionTrue},
		})
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		h.waitService("flip", "after the sidecar is ready again", map[string]wantCond{"Ready": {status: corev1.ConditionTrue}})
	})

	t.Run("a crash-looping container fails the revision with its exit code", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.forceShutdown()
		h.start(`apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: crash}
spec:
  template:
    spec:
      containers:
      - name: app
        image: busybox
        command: ["/bin/sh", "-c", "echo boom; exit 1"]
        ports: [{containerPort: 8080}]
`)
		h.waitService("crash", "while crash-looping", map[string]wantCond{
			"ContainerHealthy":    {status: corev1.ConditionFalse, reason: "ExitCode1", message: `Container failed with: container "app" exited with code 1 (Error)`},
			"ConfigurationsReady": {status: corev1.ConditionFalse, reason: "RevisionFailed", message: `Revision "crash-00001" failed with message: Container failed with`},
			"Ready":               {status: corev1.ConditionFalse, reason: "RevisionFailed"},
			"RoutesReady":         {status: corev1.ConditionUnknown, reason: "RevisionMissing"},
		})
	})

	t.Run("ready endpoints without the front door's traffic are not ready", func(t *testing.T) {
		t.Parallel()
		view := &servingCount{}
		view.set(0)
		h := newHarness(t)
		h.serving, h.domain = view, "podgate.test"
		h.start(knativeTwoContainers("door", `exec: {command: ["true"]}`))
		h.waitPodMatching("door-00001-deployment-", "ready", podReady)
		h.waitService("door", "ready endpoint, nothing serving", map[string]wantCond{
			"Ready": {status: corev1.ConditionUnknown, reason: "RevisionMissing", message: "is ready but its gate does not answer ready"},
		})
		view.set(1)
		h.endpoints.Resync("default", "door")
		svc := h.waitService("door", "once the front door serves it", map[string]wantCond{"Ready": {status: corev1.ConditionTrue}})
		if svc.Status.URL != "http://door.default.podgate.test" {
			t.Errorf("url %q, want the configured domain", svc.Status.URL)
		}
		view.set(0)
		h.endpoints.Resync("default", "door")
		h.waitService("door", "when the front door stops serving it", map[string]wantCond{
			"Ready": {status: corev1.ConditionUnknown, reason: "NoHealthyBackends"},
		})
	})
}

// knativeTwoContainers is a Knative Service whose serving container is
// always ready and whose sidecar's readiness is the given probe.
func knativeTwoContainers(name, sidecarProbe string) string {
	return fmt.Sprintf(`apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: %s}
spec:
  template:
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: app
        image: busybox
        command: ["/bin/sh", "-c", "exec sleep 600"]
        ports: [{containerPort: 8080}]
        readinessProbe:
          exec: {command: ["true"]}
          periodSeconds: 1
      - name: sidecar
        image: busybox
        command: ["/bin/sh", "-c", "exec sleep 600"]
        readinessProbe:
          %s
          periodSeconds: 1
          failureThreshold: 1
`, name, sidecarProbe)
}

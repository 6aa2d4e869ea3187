package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/local/controllers"
	"github.com/podgate/podgate/node/events"
)

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}

func TestInitContainersRunInOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	log := filepath.Join(t.TempDir(), "log")
	h.start(podYAML("init", fmt.Sprintf(`  initContainers:
  - {name: one, image: busybox, command: ["/bin/sh", "-c", "sleep 0.2; echo one >> %[1]s"]}
  - {name: two, image: busybox, command: ["/bin/sh", "-c", "echo two >> %[1]s"]}
  containers:
  - {name: main, image: busybox, command: ["/bin/sh", "-c", "echo main >> %[1]s; sleep 600"]}
`, log)))
	p := h.waitPod("init", "running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	h.waitFileLines(log, 3)
	if got := strings.Join(readLines(t, log), " "); got != "one two main" {
		t.Errorf("order = %q, want \"one two main\"", got)
	}
	for _, name := range []string{"one", "two"} {
		cs := containerStatus(p, name)
		if tm := cs.State.Terminated; tm == nil || tm.Reason != "Completed" || tm.ExitCode != 0 || !cs.Ready {
			t.Errorf("init container %s: %+v, want terminated Completed and ready", name, cs)
		}
	}
	if s := conditionStatus(p, corev1.PodInitialized); s != corev1.ConditionTrue {
		t.Errorf("Initialized = %s, want True", s)
	}
	if ev := h.waitEvent("init", events.ReasonStarted, "Started container one"); ev.InvolvedObject.FieldPath != "spec.initContainers{one}" {
		t.Errorf("fieldPath = %q, want spec.initContainers{one}", ev.InvolvedObject.FieldPath)
	}
}

func TestFailingInitContainer(t *testing.T) {
	t.Parallel()
	t.Run("restarted with back-off, holding the pod in Pending", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.start(podYAML("init", `  initContainers:
  - {name: setup, image: busybox, command: ["/bin/sh", "-c", "exit 3"]}
  containers:
  - {name: main, image: busybox, command: ["/bin/sh", "-c", "sleep 600"]}
`))
		p := h.waitPod("init", "backing off", func(p *corev1.Pod) bool {
			w := containerStatus(p, "setup").State.Waiting
			return w != nil && w.Reason == "CrashLoopBackOff"
		})
		if p.Status.Phase != corev1.PodPending {
			t.Errorf("phase = %s, want Pending", p.Status.Phase)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodInitialized && (c.Status != corev1.ConditionFalse || c.Reason != "ContainersNotInitialized" || c.Message != "containers with incomplete status: [setup]") {
				t.Errorf("Initialized = %+v", c)
			}
		}
		if w := containerStatus(p, "main").State.Waiting; w == nil || w.Reason != "PodInitializing" {
			t.Errorf("main state = %+v, want waiting PodInitializing", containerStatus(p, "main").State)
		}
		if lt := containerStatus(p, "setup").LastTerminationState.Terminated; lt == nil || lt.ExitCode != 3 {
			t.Errorf("setup lastState = %+v, want exit code 3", lt)
		}
	})
	t.Run("with restartPolicy Never the pod fails", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.start(podYAML("init", `  restartPolicy: Never
  initContainers:
  - {name: setup, image: busybox, command: ["/bin/sh", "-c", "exit 3"]}
  containers:
  - {name: main, image: busybox, command: ["/bin/sh", "-c", "sleep 600"]}
`))
		p := h.waitPod("init", "failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		if n := restarts(p, "setup"); n != 0 {
			t.Errorf("setup restarted %d times, want 0", n)
		}
		if n := len(h.events("init", events.ReasonStarted)); n != 1 {
			t.Errorf("%d Started events, want 1 (main never starts)", n)
		}
	})
}

func TestRestartPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		policy    string
		exit      int
		wantPhase corev1.PodPhase
		wantReas  string
	}{
		{"Never: a failed container fails the pod", "Never", 1, corev1.PodFailed, "Error"},
		{"Never: a succeeded container completes the pod", "Never", 0, corev1.PodSucceeded, "Completed"},
		{"OnFailure: a succeeded container completes the pod", "OnFailure", 0, corev1.PodSucceeded, "Completed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.start(podYAML("once", fmt.Sprintf(`  restartPolicy: %s
  containers:
  - {name: c, image: busybox, command: ["/bin/sh", "-c", "exit %d"]}
`, tc.policy, tc.exit)))
			p := h.waitPod("once", string(tc.wantPhase), func(p *corev1.Pod) bool { return p.Status.Phase == tc.wantPhase })
			cs := containerStatus(p, "c")
			if cs.State.Terminated == nil || cs.State.Terminated.Reason != tc.wantReas || cs.RestartCount != 0 {
				t.Errorf("status = %+v, want terminated %s without restarts", cs, tc.wantReas)
			}
			// The endpoint follows the pod status it is derived from (in
			// that order, by design), so it may lag the phase a moment.
			h.waitNoEndpoints("once", "a finished pod leaves the EndpointSlice")
		})
	}
	t.Run("OnFailure: a failed container is restarted", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.start(podYAML("once", `  restartPolicy: OnFailure
  containers:
  - {name: c, image: busybox, command: ["/bin/sh", "-c", "exit 2"]}
`))
		p := h.restarted("once", "c", 1)
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
			t.Errorf("phase = %s, want Running or Pending while restarting", p.Status.Phase)
		}
	})
}

// TestNativeSidecars pins KEP-753 ordering: sidecars start in order, each
// once its startup probe passed; main containers start after them; on
// deletion the main containers stop first, then the sidecars in reverse
// order.
func TestNativeSidecars(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	sidecar := func(name string) string {
		return fmt.Sprintf(`  - name: %[1]s
    image: busybox
    restartPolicy: Always
    command: ["/bin/sh", "-c", "trap 'echo %[1]s-stop >> %[2]s; exit 0' TERM; echo %[1]s-start >> %[2]s; sleep 0.3; touch %[3]s/%[1]s; sleep 600 & wait"]
    startupProbe:
      exec: {command: ["cat", "%[3]s/%[1]s"]}
      periodSeconds: 1
      failureThreshold: 30
`, name, log, dir)
	}
	h.start(podYAML("sc", "  initContainers:\n"+sidecar("first")+sidecar("second")+fmt.Sprintf(`  containers:
  - name: main
    image: busybox
    command: ["/bin/sh", "-c", "trap 'echo main-stop >> %[1]s; exit 0' TERM; echo main-start >> %[1]s; sleep 600 & wait"]
`, log)))
	p := h.waitPod("sc", "ready", podReady)
	if s := conditionStatus(p, corev1.PodInitialized); s != corev1.ConditionTrue {
		t.Errorf("Initialized = %s, want True", s)
	}
	// Every shell has set its TERM trap once it logged its start.
	h.waitFileLines(log, 3)
	if got := strings.Join(readLines(t, log), " "); got != "first-start second-start main-start" {
		t.Errorf("start order = %q", got)
	}
	// Each sidecar started only after the previous one's startup probe
	// passed (its file exists before the next one's first line).
	if err := h.pods.DeletePod(context.Background(), "default", "sc", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitGone("sc")
	if got := strings.Join(readLines(t, log), " "); got != "first-start second-start main-start main-stop second-stop first-stop" {
		t.Errorf("order = %q, want main to stop first, then the sidecars in reverse order", got)
	}
}

func TestSidecarStartWaitsForItsStartupProbe(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dir := t.TempDir()
	// The sidecar never passes its startup probe until the test says so:
	// the main container must not start before.
	h.start(podYAML("sc", fmt.Sprintf(`  initContainers:
  - name: side
    image: busybox
    restartPolicy: Always
    command: ["/bin/sh", "-c", "sleep 600"]
    startupProbe:
      exec: {command: ["cat", "%[1]s/go"]}
      periodSeconds: 1
      failureThreshold: 300
  containers:
  - {name: main, image: busybox, command: ["/bin/sh", "-c", "sleep 600"]}
`, dir)))
	h.waitEventCount("sc", events.ReasonUnhealthy, "Startup probe failed", 2)
	p := h.current("sc")
	if w := containerStatus(p, "main").State.Waiting; w == nil || w.Reason != "PodInitializing" {
		t.Fatalf("main = %+v before the sidecar started, want waiting PodInitializing", containerStatus(p, "main").State)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.waitPod("sc", "main running", func(p *corev1.Pod) bool { return containerStatus(p, "main").State.Running != nil })
}

func TestPreStopHooks(t *testing.T) {
	t.Parallel()
	t.Run("exec preStop runs before SIGTERM", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		log := filepath.Join(t.TempDir(), "log")
		h.start(podYAML("hook", fmt.Sprintf(`  terminationGracePeriodSeconds: 10
  containers:
  - name: c
    image: busybox
    command: ["/bin/sh", "-c", "trap 'echo term >> %[1]s; exit 0' TERM; touch %[1]s.up; sleep 600 & wait"]
    readinessProbe:
      exec: {command: ["cat", "%[1]s.up"]}
      periodSeconds: 1
    lifecycle:
      preStop:
        exec: {command: ["/bin/sh", "-c", "echo prestop-$HOSTNAME >> %[1]s"]}
`, log)))
		h.waitPod("hook", "ready", podReady)
		if err := h.pods.DeletePod(context.Background(), "default", "hook", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		h.waitGone("hook")
		if got := strings.Join(readLines(t, log), " "); got != "prestop-hook term" {
			t.Errorf("order = %q, want the hook (with the container's env) before SIGTERM", got)
		}
	})
	t.Run("httpGet preStop reaches the container before SIGTERM", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.start(podYAML("hook", `  containers:
  - name: c
    image: ghcr.io/podgate/testapp
    args: ["--port", "8080"]
    ports: [{name: web, containerPort: 8080}]
    readinessProbe:
      httpGet: {path: /readyz, port: web}
      periodSeconds: 1
    lifecycle:
      preStop:
        httpGet: {path: "/toggleLive?set=false", port: web}
`))
		h.waitPod("hook", "ready", podReady)
		if err := h.pods.DeletePod(context.Background(), "default", "hook", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		h.waitGone("hook")
		out := h.out.String()
		toggled, term := strings.Index(out, "/toggleLive"), strings.Index(out, "termination requested")
		if toggled < 0 || term < 0 || toggled > term {
			t.Errorf("want the preStop request logged before the app saw SIGTERM; output:\n%s", out)
		}
	})
	t.Run("a preStop hook longer than the grace period is cut short", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.start(podYAML("hook", `  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox
    command: ["/bin/sh", "-c", "trap 'exit 0' TERM; sleep 600 & wait"]
    lifecycle:
      preStop:
        exec: {command: ["sleep", "600"]}
`))
		h.waitPod("hook", "running", func(p *corev1.Pod) bool { return containerStatus(p, "c").State.Running != nil })
		if err := h.pods.DeletePod(context.Background(), "default", "hook", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// Within the wait limit, far below the hook's 600 s.
		h.waitGone("hook")
	})
}

func TestDeletePod(t *testing.T) {
	t.Parallel()
	t.Run("a Deployment's pod is replaced at once", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.start(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: ghcr.io/podgate/testapp
        args: ["--sleep-on-term", "2s"]
        ports: [{containerPort: 8080}]
        readinessProbe:
          httpGet: {path: /readyz, port: 8080}
          periodSeconds: 1
`)
		first := h.waitPodMatching("web-", "ready", podReady)
		if parts := strings.Split(first.Name, "-"); len(parts) != 3 || len(parts[2]) != 5 || first.Labels[controllers.LabelPodTemplateHash] != parts[1] {
			t.Errorf("pod name %q, labels %v: want web-<pod-template-hash>-<5 chars>", first.Name, first.Labels)
		}
		if err := h.pods.DeletePod(context.Background(), "default", first.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if p := h.current(first.Name); p.DeletionTimestamp == nil {
			t.Fatal("DeletePod returned before the pod was marked terminating")
		}
		// While the old pod drains (--sleep-on-term), it is a terminating
		// endpoint: serving, not ready.
		h.waitSlice("web", "old endpoint terminating", func(s *discoveryv1.EndpointSlice) bool {
			ep := endpointOf(s, first.Name)
			return ep != nil && *ep.Conditions.Terminating && !*ep.Conditions.Ready
		})
		second := h.waitPodMatching("web-", "replacement ready", func(p *corev1.Pod) bool {
			return p.Name != first.Name && podReady(p)
		})
		if !strings.HasPrefix(second.Name, strings.TrimSuffix(first.Name, first.Name[len(first.Name)-5:])) {
			t.Errorf("replacement %q does not share %q's ReplicaSet prefix", second.Name, first.Name)
		}
		h.waitGone(first.Name)
	})
	t.Run("a bare Pod is not replaced", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.start(podYAML("solo", `  containers:
  - {name: c, image: busybox, command: ["/bin/sh", "-c", "trap 'exit 0' TERM; sleep 600 & wait"]}
`))
		h.waitPod("solo", "running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		if err := h.pods.DeletePod(context.Background(), "default", "solo", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		h.waitGone("solo")
		if pods, _ := h.store.Pods.List(""); len(pods) != 0 {
			t.Errorf("pods after deleting the only Pod: %d, want 0", len(pods))
		}
		if err := h.pods.DeletePod(context.Background(), "default", "solo", metav1.DeleteOptions{}); err == nil {
			t.Error("deleting a gone pod: want NotFound")
		}
	})
	t.Run("grace period 0 kills at once", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.start(podYAML("solo", `  terminationGracePeriodSeconds: 600
  containers:
  - {name: c, image: busybox, command: ["/bin/sh", "-c", "trap '' TERM; sleep 600 & wait"]}
`))
		h.waitPod("solo", "running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		zero := int64(0)
		if err := h.pods.DeletePod(context.Background(), "default", "solo", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		h.waitGone("solo")
	})
}

func (h *harness) waitSlice(name, what string, cond func(*discoveryv1.EndpointSlice) bool) {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		if s := h.slice(name); s != nil && cond(s) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.t.Fatalf("EndpointSlice %s: not %s within %s: %+v", name, what, waitLimit, h.slice(name))
}

// waitNoEndpoints waits until the slice name lists no endpoint (or does
// not exist).
func (h *harness) waitNoEndpoints(name, what string) {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		if s := h.slice(name); s == nil || len(s.Endpoints) == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.t.Fatalf("EndpointSlice %s: %s: still %+v after %s", name, what, h.slice(name).Endpoints, waitLimit)
}

// waitPodMatching waits for a pod whose name starts with prefix and which
// satisfies cond.
func (h *harness) waitPodMatching(prefix, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		pods, _ := h.store.Pods.List("default")
		for _, p := range pods {
			if strings.HasPrefix(p.Name, prefix) && cond(p) {
				return p
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.t.Fatalf("no pod %s* %s within %s", prefix, what, waitLimit)
	return nil
}

func TestSidecarIsRestartedWhileTheMainContainerRuns(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.start(podYAML("sc", `  restartPolicy: Never
  initContainers:
  - name: side
    image: busybox
    restartPolicy: Always
    command: ["/bin/sh", "-c", "sleep 0.2; exit 1"]
  containers:
  - {name: main, image: busybox, command: ["/bin/sh", "-c", "sleep 600"]}
`))
	// Even with restartPolicy Never a native sidecar always restarts; the
	// pod stays initialized and its main container untouched.
	p := h.waitPod("sc", "sidecar back-off", func(p *corev1.Pod) bool {
		w := containerStatus(p, "side").State.Waiting
		return w != nil && w.Reason == "CrashLoopBackOff"
	})
	if n := restarts(p, "side"); n < 1 {
		t.Errorf("sidecar restartCount = %d, want at least 1", n)
	}
	if s := conditionStatus(p, corev1.PodInitialized); s != corev1.ConditionTrue {
		t.Errorf("Initialized = %s, want True", s)
	}
	if cs := containerStatus(p, "main"); cs.State.Running == nil || cs.RestartCount != 0 {
		t.Errorf("main = %+v, want running, never restarted", cs)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.ContainersReady && c.Message != "containers with unready status: [side]" {
			t.Errorf("ContainersReady = %+v, want the sidecar named unready", c)
		}
	}
}

package lab_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/lab"
	"github.com/podgate/podgate/lab/load"
	"github.com/podgate/podgate/lab/manifest"
)

// The seed experiments (docs/facts.md §6, seeds 000 and 001) as end-to-end
// scenarios: the real podgate, load through its front door all along,
// the test app's toggles, and the outcome podgate promises. Locally each
// runs on its own pod range (127.0.70.0/24 … 127.0.78.0/24) with its own
// exec files; the seven that Kubernetes users meet run on a cluster too,
// the same steps (cluster_seeds_test.go).

// Seed "1-ksvc-default": one container, Knative's default probing. Load
// starts before the pod is up (those requests are held, not refused) and
// every request is served.
func TestSeedSingleContainerDefaultServesEveryRequest(t *testing.T) {
	t.Parallel()
	s := startScenario(t, local{"127.0.70.0/24"}, example(t, "single-container-default"), "runtime", 1)
	s.startLoad()

	pod := s.waitReady("runtime")
	s.within("service URL", func(ctx context.Context) error {
		svc, err := lab.GetService(ctx, s.w.(lab.Local).Client(), "default", "runtime")
		if err == nil && svc.Status.URL != "http://runtime.default.example.com" {
			t.Errorf("status.url = %q, want http://runtime.default.example.com", svc.Status.URL)
		}
		return err
	})
	s.waitOK(200)
	rec := s.stopLoad()
	s.stop()

	s.noFailures(rec)
	for _, q := range rec.Requests {
		if q.OK() && strings.TrimSpace(q.Body) != pod.Name {
			t.Errorf("request answered %q, want the pod's name %s", q.Body, pod.Name)
			break
		}
	}
}

// Seed "exec readiness": the exec probe fails. Knative stayed Ready while
// its activator held requests until 504; podgate reports the service not
// serving, naming the container, holds requests (podgate run: until the
// revision timeout, 504 "activator request timeout") and releases them
// when the probe passes again.
func TestSeedExecReadinessHoldsThen504ThenReleases(t *testing.T) {
	t.Parallel()
	seedExecReadiness(t, local{"127.0.71.0/24"})
}

func seedExecReadiness(t *testing.T, where place) {
	execFile := filepath.Join(t.TempDir(), "ready")
	m := example(t, "exec-readiness", "/tmp/podgate-example-exec-readiness", execFile)
	// Long enough that a request sent as the probe passes again is
	// released, not timed out; short enough to see 504s soon.
	if err := m.SetPodSpec("timeoutSeconds", 4); err != nil {
		t.Fatal(err)
	}
	s := startScenario(t, where, m, "runtime", 1)
	pod := s.waitReady("runtime")
	s.startLoad()
	s.waitOK(50)

	off := s.toggle(pod, 8080, lab.ToggleExec, false)
	notReady := s.waitService("runtime", lab.NotServing)
	s.statusNames("runtime", "user-container")
	if s.w.TimesOutHeldRequests() {
		s.within("a held request timed out", func(ctx context.Context) error {
			_, err := s.load.Wait(ctx, "504 activator request timeout", func(r *load.Recording) bool {
				for _, q := range r.WithStatus(504, "activator request timeout") {
					if !q.Start.Before(notReady) {
						return true
					}
				}
				return false
			})
			return err
		})
	}
	s.waitHeld(off)
	on := s.toggle(pod, 8080, lab.ToggleExec, true)
	s.waitServedAfter(on, "served again after the exec file came back")
	s.waitService("runtime", lab.Serving)
	rec := s.stopLoad()
	s.stop()

	s.heldNotServed(rec, outage{off: off, notReady: notReady, back: on})
	for _, q := range rec.Failures() {
		if q.Status != 504 || !strings.HasPrefix(q.Body, "activator request timeout") || q.Start.Before(off) {
			t.Errorf("failure other than a held request timing out after the toggle: %s", q.Format(s.tl.Origin()))
		}
	}
}

// Seed "exec liveness": the exec liveness probe fails and the serving
// container is restarted. Through Knative's queue-proxy clients saw 502
// "connection refused"; through podgate not one request fails.
func TestSeedExecLivenessRestartLosesNoRequest(t *testing.T) {
	t.Parallel()
	seedExecLiveness(t, local{"127.0.73.0/24"})
}

func seedExecLiveness(t *testing.T, where place) {
	execFile := filepath.Join(t.TempDir(), "live")
	m := example(t, "exec-liveness", "/tmp/podgate-example-exec-liveness", execFile)
	s := startScenario(t, where, m, "runtime", 1)
	pod := s.waitReady("runtime")
	s.startLoad()
	s.waitOK(50)

	before := lab.ContainerStatus(pod, "user-container").RestartCount
	s.toggle(pod, 8080, lab.ToggleExec, false)
	s.within("user-container restarted", func(ctx context.Context) error {
		_, err := lab.WaitRestart(ctx, s.w, pod.Name, "user-container", before)
		return err
	})
	restarted := s.tl.Mark("user-container restarted")
	s.waitServedAfter(restarted, "served by the restarted container")
	s.waitOK(50)
	s.within("the kubelet's events", func(ctx context.Context) error {
		return lab.Poll(ctx, lab.PollInterval, "a Killing event", func(ctx context.Context) (bool, error) {
			events, err := s.w.ListEvents(ctx, apiAll)
			if err != nil {
				return false, err
			}
			for _, e := range events.Items {
				if e.Reason == "Killing" && e.InvolvedObject.Name == pod.Name &&
					e.InvolvedObject.FieldPath == "spec.containers{user-container}" &&
					strings.Contains(e.Message, "failed liveness probe, will be restarted") {
					return true, nil
				}
			}
			return false, fmt.Errorf("no Killing event for the liveness failure among %d events", len(events.Items))
		})
	})
	rec := s.stopLoad()
	s.stop()

	s.noFailures(rec)
}

// Not a seed experiment, the status rule the issue names: a serving
// container that exits 1 at every start. Knative reports the revision's
// ContainerHealthy False "ExitCode1"; podgate says so on the Service, with
// Ready False RevisionFailed, and the held requests end in the activator's
// 504, never a 502 from a dead container.
func TestCrashLoopingContainerFailsTheServiceWithItsExitCode(t *testing.T) {
	t.Parallel()
	m, err := manifest.Parse([]byte(`apiVersion: serving.knative.dev/v1
kind: Service
metadata:
  name: crash
spec:
  template:
    spec:
      timeoutSeconds: 3
      containers:
        - name: app
          image: busybox
          command: ["/bin/sh", "-c", "echo starting; exit 1"]
          ports:
            - containerPort: 8080
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetPodSpec("terminationGracePeriodSeconds", scenarioGrace); err != nil {
		t.Fatal(err)
	}
	s := startScenario(t, local{"127.0.80.0/24"}, m, "crash", 1)
	s.startLoad()
	s.within("the service fails with the exit code", func(ctx context.Context) error {
		svc, err := lab.WaitServiceCondition(ctx, s.w.(lab.Local).Client(), "default", "crash",
			lab.ServiceReady(corev1.ConditionFalse, "RevisionFailed"),
			lab.ServiceCondition{Type: "ContainerHealthy", Status: corev1.ConditionFalse, Reason: "ExitCode1"},
			lab.ServiceCondition{Type: "ConfigurationsReady", Status: corev1.ConditionFalse, Reason: "RevisionFailed"})
		if err != nil {
			return err
		}
		if c := svc.Status.Condition("ContainerHealthy"); !strings.Contains(c.Message, `container "app" exited with code 1`) {
			t.Errorf("ContainerHealthy message %q does not name the container and its exit code", c.Message)
		}
		return nil
	})
	s.tl.Mark("service failed")
	s.within("a held request timed out", func(ctx context.Context) error {
		_, err := s.load.Wait(ctx, "504 activator request timeout", func(r *load.Recording) bool {
			return len(r.WithStatus(504, "activator request timeout")) > 0
		})
		return err
	})
	rec := s.stopLoad()
	s.stop()

	for _, q := range rec.Requests {
		if q.OK() || q.Status != 504 || !strings.HasPrefix(q.Body, "activator request timeout") {
			t.Errorf("want every request held and timed out by the activator, got %s", q.Format(s.tl.Origin()))
		}
	}
}

package node

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/node/events"
	"github.com/podgate/podgate/node/kill"
)

// The pod's grace period is far longer than any wait here: only the
// probe-level override can make the restart happen in time.
func TestProbeTerminationGracePeriodOverridesThePods(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"livenessProbe", "startupProbe"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.forceShutdown()
			h.start(podYAML("probe", fmt.Sprintf(`  terminationGracePeriodSeconds: 600
  containers:
  - name: c
    image: busybox
    command: ["/bin/sh", "-c", "trap '' TERM; sleep 600 & wait"]
    %s:
      exec: {command: ["false"]}
      initialDelaySeconds: 1
      periodSeconds: 1
      failureThreshold: 1
      terminationGracePeriodSeconds: 1
`, kind)))
			p := h.restarted("probe", "c", 1)
			last := containerStatus(p, "c").LastTerminationState.Terminated
			if last == nil || last.ExitCode != 137 {
				t.Fatalf("lastState = %+v, want killed by SIGKILL (137) after the probe's grace period", last)
			}
			// SIGKILL came after the kubelet's 2 s floor, not the probe's 1 s.
			if ran := last.FinishedAt.Sub(last.StartedAt.Time); ran < kill.MinGrace {
				t.Errorf("container ran %s, want at least the 2s minimum grace period after SIGTERM", ran)
			}
		})
	}
}

func TestTerminatingPod(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dir := t.TempDir()
	// On SIGTERM the container removes the file both probes read and
	// keeps running until SIGKILL at the 5 s grace period.
	h.start(podYAML("probe", fmt.Sprintf(`  terminationGracePeriodSeconds: 5
  containers:
  - name: c
    image: busybox
    command: ["/bin/sh", "-c", "trap 'rm -f %[1]s/ok; sleep 600' TERM; touch %[1]s/ok; sleep 600 & wait"]
    readinessProbe:
      exec: {command: ["cat", "%[1]s/ok"]}
      periodSeconds: 1
    livenessProbe:
      exec: {command: ["cat", "%[1]s/ok"]}
      periodSeconds: 1
      failureThreshold: 1
    startupProbe:
      exec: {command: ["cat", "%[1]s/ok"]}
      periodSeconds: 1
      failureThreshold: 120
`, dir)))
	h.waitPod("probe", "ready", podReady)
	if err := h.pods.DeletePod(context.Background(), "default", "probe", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p := h.current("probe")
	if p.DeletionTimestamp == nil || p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 5 {
		t.Fatalf("after DeletePod: deletionTimestamp %v, grace %v; want both set, grace 5", p.DeletionTimestamp, p.DeletionGracePeriodSeconds)
	}

	t.Run("readiness keeps probing and turns false while terminating", func(t *testing.T) {
		p := h.waitPod("probe", "not ready while terminating", func(p *corev1.Pod) bool {
			return !podReady(p) && containerStatus(p, "c").State.Running != nil
		})
		if p.DeletionTimestamp == nil {
			t.Fatal("not terminating")
		}
		// The endpoint follows the pod status it is derived from.
		h.waitSlice("probe", "ready=false serving=false terminating=true", func(s *discoveryv1.EndpointSlice) bool {
			ep := endpointOf(s, "probe")
			return ep != nil && !*ep.Conditions.Ready && !*ep.Conditions.Serving && *ep.Conditions.Terminating
		})
	})
	t.Run("liveness is disabled while terminating", func(t *testing.T) {
		// Readiness fails every second on the same file: two failures
		// mean liveness had two chances to fail too.
		h.waitEventCount("probe", events.ReasonUnhealthy, "Readiness probe failed", 2)
		if n := h.eventCount("probe", events.ReasonUnhealthy, "Liveness"); n != 0 {
			t.Errorf("%d liveness failures while terminating, want none", n)
		}
		if n := restarts(h.current("probe"), "c"); n != 0 {
			t.Errorf("restartCount = %d, want 0", n)
		}
	})
	t.Run("the pod is gone after SIGKILL at the grace period", func(t *testing.T) {
		h.waitGone("probe")
		if n := len(h.events("probe", events.ReasonKilling)); n != 1 {
			t.Errorf("%d Killing events, want 1 (Stopping container c)", n)
		}
		h.waitNoEndpoints("probe", "no endpoint once the pod is gone")
	})
}

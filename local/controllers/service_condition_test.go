package controllers

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
)

// TestKnativeServiceStatusNamesTheContainerTheGateNames: a Knative
// Service whose pod is not ready only in its gate's view says which
// container keeps traffic away, as the gate's condition on the pod says;
// a pod without that condition points at the gate's verbose readiness.
func TestKnativeServiceStatusNamesTheContainerTheGateNames(t *testing.T) {
	t.Parallel()
	const named = "containers not ready: side (readiness probe failed: HTTP probe failed with statuscode: 503)"
	for _, tc := range []struct {
		name      string
		condition *corev1.PodCondition
		want      string
	}{
		{"the gate's condition names the container",
			&corev1.PodCondition{Type: contract.ContainersReadyCondition, Status: corev1.ConditionFalse, Reason: contract.ReasonContainersNotReady, Message: named},
			"pod h: " + named},
		{"without it, the gate's verbose readiness is where to look", nil,
			"pod h: its gate reports a container not ready (http://127.0.1.9:8022/readyz?verbose names it)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, store := startEndpoints(t, EndpointsConfig{Workloads: loadWorkloads(t, deploymentAndService)})
			rev := map[string]string{workload.LabelKnativeRevision: "hello-00001"}
			p := podState{name: "h", ip: "127.0.1.9", labels: rev, statuses: []corev1.ContainerStatus{
				{Name: contract.GateContainerName, Ready: false, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			}}.pod()
			if tc.condition != nil {
				p.Status.Conditions = append(p.Status.Conditions, *tc.condition)
			}
			if _, err := store.Pods.Create(p); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(waitLimit)
			for {
				svc, _ := store.Services.Get("default", "hello")
				var msg string
				if svc != nil {
					for _, c := range svc.Status.Conditions {
						if c.Type == condRoutesReady {
							msg = c.Message
						}
					}
				}
				if strings.Contains(msg, tc.want) {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("RoutesReady message %q, want it to contain %q", msg, tc.want)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}

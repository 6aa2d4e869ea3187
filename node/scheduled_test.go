package node

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A pod created already bound (spec.nodeName set, as a DaemonSet's or a
// hand-written one on a cluster) carries no PodScheduled condition: the
// agent reports it True, as the kubelet does, and never a condition
// without a type (the API server refuses such a status).
func TestABoundPodWithoutPodScheduledIsReportedScheduled(t *testing.T) {
	h := newHarness(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bound", Namespace: "default", UID: "bound-uid"},
		Spec: corev1.PodSpec{
			NodeName:                      h.agent.NodeName(),
			TerminationGracePeriodSeconds: new(int64),
			Containers:                    []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"sleep", "600"}}},
		},
	}
	if _, err := h.store.Pods.Create(pod); err != nil {
		t.Fatal(err)
	}
	p := h.waitPod("bound", "running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	var scheduled *corev1.PodCondition
	for i, c := range p.Status.Conditions {
		if c.Type == "" {
			t.Errorf("condition %d has no type: %+v", i, c)
		}
		if c.Type == corev1.PodScheduled {
			scheduled = &p.Status.Conditions[i]
		}
	}
	if scheduled == nil || scheduled.Status != corev1.ConditionTrue || scheduled.LastTransitionTime.IsZero() {
		t.Errorf("PodScheduled = %+v, want True with a transition time", scheduled)
	}
}

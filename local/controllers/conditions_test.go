package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/gate/contract"
)

// TestAgentStatusWritesKeepOthersConditions: the node agent writes the
// whole status, yet a condition someone else wrote on the pod (the gate's,
// through a pods/status patch) stays as stored, whatever the agent's copy
// of it says, while the agent's own conditions are replaced by its write.
func TestAgentStatusWritesKeepOthersConditions(t *testing.T) {
	t.Parallel()
	gateType := corev1.PodConditionType(contract.ContainersReadyCondition)
	c := func(typ corev1.PodConditionType, s corev1.ConditionStatus, msg string) corev1.PodCondition {
		return corev1.PodCondition{Type: typ, Status: s, Message: msg}
	}
	for _, tc := range []struct {
		name           string
		stored, agents []corev1.PodCondition
		want           []corev1.PodCondition
	}{
		{"the gate's condition stays, first, and the agent's are its write",
			[]corev1.PodCondition{c(corev1.PodReady, corev1.ConditionFalse, "old"), c(gateType, corev1.ConditionFalse, "containers not ready: side")},
			[]corev1.PodCondition{c(corev1.PodInitialized, corev1.ConditionTrue, ""), c(corev1.PodReady, corev1.ConditionTrue, "")},
			[]corev1.PodCondition{c(gateType, corev1.ConditionFalse, "containers not ready: side"),
				c(corev1.PodInitialized, corev1.ConditionTrue, ""), c(corev1.PodReady, corev1.ConditionTrue, "")}},
		{"the agent's stale copy of another's condition does not overwrite it",
			[]corev1.PodCondition{c(gateType, corev1.ConditionTrue, "")},
			[]corev1.PodCondition{c(gateType, corev1.ConditionFalse, "stale"), c(corev1.PodReady, corev1.ConditionTrue, "")},
			[]corev1.PodCondition{c(gateType, corev1.ConditionTrue, ""), c(corev1.PodReady, corev1.ConditionTrue, "")}},
		{"an agent's condition it no longer writes goes, as the kubelet's would",
			[]corev1.PodCondition{c(corev1.PodResizePending, corev1.ConditionTrue, ""), c("example.com/lb", corev1.ConditionTrue, "")},
			[]corev1.PodCondition{c(corev1.PodReady, corev1.ConditionFalse, "")},
			[]corev1.PodCondition{c("example.com/lb", corev1.ConditionTrue, ""), c(corev1.PodReady, corev1.ConditionFalse, "")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pods, store := newPods(t)
			p := createPod(t, store, "web", "n1", nil)
			if _, err := store.Pods.Modify("default", "web", func(cur *corev1.Pod) error {
				cur.Status.Conditions = tc.stored
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			write := p.DeepCopy()
			write.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: tc.agents}
			if err := pods.UpdatePodStatus(write); err != nil {
				t.Fatal(err)
			}
			got, err := store.Pods.Get("default", "web")
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Phase != corev1.PodRunning {
				t.Errorf("phase %q: the agent's status was not written", got.Status.Phase)
			}
			if len(got.Status.Conditions) != len(tc.want) {
				t.Fatalf("conditions %+v\nwant %+v", got.Status.Conditions, tc.want)
			}
			for i, w := range tc.want {
				if g := got.Status.Conditions[i]; g.Type != w.Type || g.Status != w.Status || g.Message != w.Message {
					t.Errorf("condition %d: %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podgate/podgate/local/objstore"
)

// TestStrategicMergePatchOfStatusConditionsMergesByType: status.conditions
// is a list merged by its key, type (patchMergeKey), as the API server
// merges it: a patch naming one condition changes that one only, fields
// it leaves out stay, null removes a field. A JSON merge patch (RFC 7386)
// replaces the whole list instead, which is why a writer of one condition
// (the gate) sends a strategic merge patch.
func TestStrategicMergePatchOfStatusConditionsMergesByType(t *testing.T) {
	s := startServer(t, Config{Store: objstore.New(objstore.Options{})})
	cs, _ := s.clientset(t)
	ctx := t.Context()
	type cond struct{ typ, status, reason string }
	for _, tc := range []struct {
		name  string
		typ   types.PatchType
		patch string
		want  []cond
	}{
		{"a new type is added (first, as apimachinery's merge orders it); the others stay", types.StrategicMergePatchType,
			`{"status":{"conditions":[{"type":"podgate.dev/containers-ready","status":"False","reason":"ContainersNotReady"}]}}`,
			[]cond{{"podgate.dev/containers-ready", "False", "ContainersNotReady"}, {"Ready", "False", "ReadinessGatesNotReady"}, {"ContainersReady", "True", ""}}},
		{"an existing type changes alone; what the patch leaves out stays", types.StrategicMergePatchType,
			`{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`,
			[]cond{{"Ready", "True", "ReadinessGatesNotReady"}, {"ContainersReady", "True", ""}}},
		{"null removes a field of that condition", types.StrategicMergePatchType,
			`{"status":{"conditions":[{"type":"Ready","status":"True","reason":null}]}}`,
			[]cond{{"Ready", "True", ""}, {"ContainersReady", "True", ""}}},
		{"a JSON merge patch replaces the list", types.MergePatchType,
			`{"status":{"conditions":[{"type":"podgate.dev/containers-ready","status":"True"}]}}`,
			[]cond{{"podgate.dev/containers-ready", "True", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := cs.CoreV1().Pods("default")
			p := boundPod("cond")
			created, err := pods.Create(ctx, p, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = pods.Delete(ctx, "cond", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}) })
			created.Status.Conditions = []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ReadinessGatesNotReady"},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
			}
			if _, err := pods.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			out, err := pods.Patch(ctx, "cond", tc.typ, []byte(tc.patch), metav1.PatchOptions{}, "status")
			if err != nil {
				t.Fatal(err)
			}
			var got []cond
			for _, c := range out.Status.Conditions {
				got = append(got, cond{string(c.Type), string(c.Status), c.Reason})
			}
			if len(got) != len(tc.want) {
				t.Fatalf("conditions %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("conditions %v, want %v", got, tc.want)
					break
				}
			}
		})
	}
}

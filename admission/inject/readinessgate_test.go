package inject

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
)

func gateTypes(w *workload.Workload) []corev1.PodConditionType {
	var out []corev1.PodConditionType
	for _, g := range w.PodSpec().ReadinessGates {
		out = append(out, g.ConditionType)
	}
	return out
}

func TestInjectAddsTheGatesReadinessGateOnce(t *testing.T) {
	ours := corev1.PodConditionType(contract.ContainersReadyCondition)
	const container = "  containers:\n  - name: web\n    image: i\n    ports: [{containerPort: 8080}]\n"
	podWith := func(gates string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n" + gates + container
	}
	deployment := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  selector: {matchLabels: {app: d}}\n" +
		"  template:\n    metadata: {labels: {app: d}}\n    spec:\n      containers:\n      - name: web\n        image: i\n        ports: [{containerPort: 8080}]\n"
	for _, tc := range []struct {
		name     string
		manifest string
		want     []corev1.PodConditionType
	}{
		{"a pod without readiness gates gets the gate's", podWith(""), []corev1.PodConditionType{ours}},
		{"a deployment's pod template gets it", deployment, []corev1.PodConditionType{ours}},
		{"a Knative Service's revision template gets it",
			ksvc("      - name: main\n        image: i\n        ports: [{containerPort: 8080}]\n"), []corev1.PodConditionType{ours}},
		{"the user's readiness gates stay, first",
			podWith("  readinessGates: [{conditionType: example.com/lb-registered}]\n"),
			[]corev1.PodConditionType{"example.com/lb-registered", ours}},
		{"the gate's, written by the user, is not added twice",
			podWith("  readinessGates: [{conditionType: " + contract.ContainersReadyCondition + "}, {conditionType: example.com/x}]\n"),
			[]corev1.PodConditionType{ours, "example.com/x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, opts := range []Options{{}, {Local: true}, {GateAsContainer: true}} {
				w, _ := injected(t, tc.manifest, opts)
				if got := gateTypes(w); !slices.Equal(got, tc.want) {
					t.Errorf("%+v: readiness gates %v, want %v", opts, got, tc.want)
				}
				again, err := Gate(w, opts)
				if err != nil {
					t.Fatal(err)
				}
				if got := gateTypes(again); !slices.Equal(got, tc.want) {
					t.Errorf("%+v: injected twice, readiness gates %v, want %v", opts, got, tc.want)
				}
			}
		})
	}
}

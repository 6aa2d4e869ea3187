package validation

import (
	"strings"
	"testing"
)

func TestDrainQuietPeriodAnnotation(t *testing.T) {
	pod := func(annotation, grace string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: {podgate.dev/drain-quiet-period: " + annotation + "}\nspec:\n" + grace +
			"  containers:\n  - name: app\n    image: img\n    ports: [{containerPort: 8080}]\n"
	}
	deployment := func(annotation string) string {
		return `apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  selector: {matchLabels: {app: d}}
  template:
    metadata:
      labels: {app: d}
      annotations: {podgate.dev/drain-quiet-period: ` + annotation + `}
    spec:
      terminationGracePeriodSeconds: 10
      containers:
      - name: app
        image: img
        ports: [{containerPort: 8080}]
`
	}
	for _, tc := range []struct {
		name     string
		manifest string
		want     []string // nil: valid
	}{
		{"a duration shorter than the default grace period is valid", pod(`"5s"`, ""), nil},
		{"zero is valid", pod(`"0s"`, ""), nil},
		{"not a duration is named by its field path", pod(`"30"`, ""),
			[]string{`metadata.annotations[podgate.dev/drain-quiet-period]: Invalid value: "30": not a duration such as 5s or 1m30s: time: missing unit in duration "30"`}},
		{"a negative duration is refused", pod(`"-5s"`, ""),
			[]string{`metadata.annotations[podgate.dev/drain-quiet-period]: Invalid value: "-5s": must not be negative`}},
		{"the default grace period of 30 s does not fit 30 s", pod(`"30s"`, ""),
			[]string{`metadata.annotations[podgate.dev/drain-quiet-period]: Invalid value: "30s": must be shorter than the pod's terminationGracePeriodSeconds (30): the drain runs inside the grace period, and the kubelet's SIGKILL ends it`}},
		{"a longer grace period fits a longer quiet period", pod(`"45s"`, "  terminationGracePeriodSeconds: 60\n"), nil},
		{"a Deployment's template annotation is checked against its grace period", deployment(`"10s"`),
			[]string{`spec.template.metadata.annotations[podgate.dev/drain-quiet-period]: Invalid value: "10s": must be shorter than the pod's terminationGracePeriodSeconds (10)`}},
		{"a Deployment's template annotation that fits", deployment(`"9s"`), nil},
		{"a Knative Service's revision template is checked against its timeoutSeconds, its pods' grace period",
			ksvc("      - {image: i}\n", "      timeoutSeconds: 20\n", "    metadata: {annotations: {podgate.dev/drain-quiet-period: 20s}}\n"),
			[]string{`spec.template.metadata.annotations[podgate.dev/drain-quiet-period]: Invalid value: "20s": must be shorter than the pod's terminationGracePeriodSeconds (20)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := validationLines(t, tc.manifest)
			if len(got) != len(tc.want) {
				t.Fatalf("errors %q; want %q", got, tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("error %d: %q; want it to start with %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

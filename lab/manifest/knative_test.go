package manifest

import (
	"strings"
	"testing"
)

const ksvcDoc = `apiVersion: serving.knative.dev/v1
kind: Service
metadata:
  name: hello
  namespace: default
spec:
  template:
    metadata:
      annotations:
        keep: me
    spec:
      timeoutSeconds: 30
      terminationGracePeriodSeconds: 4
      containers:
        - image: ghcr.io/podgate/testapp
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: other
`

func TestForKnativeKeepsTheKnativeServiceAndPinsScaleAndPath(t *testing.T) {
	m, err := Parse([]byte(ksvcDoc))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		replicas, burst int
		want            []string
	}{
		{1, -1, []string{"min-scale: \"1\"", "max-scale: \"1\"", "target-burst-capacity: \"-1\""}},
		{2, 0, []string{"min-scale: \"2\"", "max-scale: \"2\"", "target-burst-capacity: \"0\""}},
	} {
		k, names, err := m.ForKnative(tc.replicas, tc.burst)
		if err != nil {
			t.Fatal(err)
		}
		b, err := k.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, w := range append(tc.want, "kind: Service", "serving.knative.dev/v1", "keep: me", "timeoutSeconds: 30", "kind: ConfigMap") {
			if !strings.Contains(text, w) {
				t.Errorf("replicas %d burst %d: %q missing in\n%s", tc.replicas, tc.burst, w, text)
			}
		}
		if strings.Contains(text, "terminationGracePeriodSeconds") || strings.Contains(text, "namespace: default") || strings.Contains(text, "kind: Deployment") {
			t.Errorf("namespace kept or converted:\n%s", text)
		}
		if len(names) != 1 || names[0] != "hello" {
			t.Errorf("names %q, want [hello]", names)
		}
	}
}

func TestForKnativeRefusesWhatItCannotPin(t *testing.T) {
	m, err := Parse([]byte(ksvcDoc))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ replicas, burst int }{{0, -1}, {1, 5}} {
		if _, _, err := m.ForKnative(tc.replicas, tc.burst); err == nil {
			t.Errorf("replicas %d burst %d accepted", tc.replicas, tc.burst)
		}
	}
	none, _ := Parse([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"))
	if _, _, err := none.ForKnative(1, 0); err == nil {
		t.Error("a manifest without a Knative Service accepted")
	}
}

package inject

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/admission/workload"
)

// one loads a manifest holding exactly one workload, without problems.
func one(t *testing.T, manifest string) *workload.Workload {
	t.Helper()
	m, err := workload.Load(strings.NewReader(manifest), "m.yaml")
	var ps workload.Problems
	if err != nil && !errors.As(err, &ps) {
		t.Fatalf("Load: %v", err)
	}
	if len(ps) > 0 {
		t.Fatalf("load problems: %v", ps)
	}
	if len(m.Workloads) != 1 {
		t.Fatalf("%d workloads, want 1", len(m.Workloads))
	}
	return m.Workloads[0]
}

// ksvc is a Knative Service of the containers given (YAML indented for
// the template's spec), with optional extra spec and metadata lines.
func ksvc(containers string, extra ...string) string {
	spec := ""
	meta := ""
	if len(extra) > 0 {
		spec = extra[0]
	}
	if len(extra) > 1 {
		meta = extra[1]
	}
	return "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: svc}\nspec:\n  template:\n" + meta + "    spec:\n" + spec + "      containers:\n" + containers
}

// podWith is a Pod whose single container "app" (image, port 8080) gets
// the extra YAML lines given (indented for the container).
func podWith(container string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: app\n    image: img\n    ports: [{name: http, containerPort: 8080}]\n" + indent(container, 4)
}

// svcWith is a Knative Service: serving container "app" on 8080 with the
// extra lines, plus an optional sidecar "side".
func svcWith(app, side string) string {
	s := "      - name: app\n        image: img\n        ports: [{containerPort: 8080}]\n" + indent(app, 8)
	if side != "" {
		s += "      - name: side\n        image: img\n" + indent(side, 8)
	}
	return ksvc(s)
}

func indent(s string, n int) string {
	if s == "" {
		return ""
	}
	pad := strings.Repeat(" ", n)
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = pad + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

// envValue finds a literal environment variable of a container.
func envValue(c *corev1.Container, name string) (string, int, bool) {
	for i, e := range c.Env {
		if e.Name == name {
			return e.Value, i, true
		}
	}
	return "", -1, false
}

// resolveEnv resolves a container's env as the node agent or kubelet
// would, with fields giving the downward API's values.
func resolveEnv(t *testing.T, vars []corev1.EnvVar, fields map[string]string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, v := range vars {
		switch {
		case v.ValueFrom == nil:
			env[v.Name] = expandEarlier(v.Value, env)
		case v.ValueFrom.FieldRef != nil:
			val, ok := fields[v.ValueFrom.FieldRef.FieldPath]
			if !ok {
				t.Fatalf("env %s refers to unknown field %s", v.Name, v.ValueFrom.FieldRef.FieldPath)
			}
			env[v.Name] = val
		default:
			t.Fatalf("env %s has a source the gate cannot rely on", v.Name)
		}
	}
	return env
}

// assertStrings compares lists; with prefix, want[i] need only start got[i].
func assertStrings(t *testing.T, what string, got, want []string, prefix bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s = %q, want %q", what, got, want)
		return
	}
	for i := range want {
		if got[i] != want[i] && !(prefix && strings.HasPrefix(got[i], want[i])) {
			t.Errorf("%s[%d] = %q, want %q", what, i, got[i], want[i])
		}
	}
}

// earlierRef is a $(VAR) reference in a variable's value.
var earlierRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expandEarlier expands $(VAR) as the kubelet does: a reference to a
// variable defined earlier in the list becomes its value, any other stays
// as written. ($$ escapes are not needed by what the injection writes.)
func expandEarlier(value string, earlier map[string]string) string {
	return earlierRef.ReplaceAllStringFunc(value, func(ref string) string {
		if v, ok := earlier[ref[2:len(ref)-1]]; ok {
			return v
		}
		return ref
	})
}

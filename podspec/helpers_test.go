package podspec

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

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
			env[v.Name] = v.Value
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

package probe

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/internal/expansion"
)

// expandCommand expands $(VAR) in an exec probe's argv from the container's
// env, with the kubelet's rules:
//   - $(NAME) becomes the value of the last env entry called NAME. An entry
//     set with valueFrom counts, with its empty static value: the kubelet
//     expands only static values and does not skip the others.
//   - $(NAME) for a name not in env stays as written.
//   - $$ is an escaped $.
//   - a $ before anything else, or an unclosed $(, stays as written.
//
// There is no shell: the result is the argv to run.
func expandCommand(argv []string, env []corev1.EnvVar) []string {
	needed := false
	for _, a := range argv {
		if strings.IndexByte(a, '$') >= 0 {
			needed = true
			break
		}
	}
	if !needed {
		return argv
	}
	vars := make(map[string]string, len(env))
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = expandVars(a, vars)
	}
	return out
}

func expandVars(s string, vars map[string]string) string {
	return expansion.Expand(s, expansion.MapLookup(vars))
}

package workload

import "strings"

// podWith is a Pod whose single container "app" (image, port 8080) gets
// the extra YAML lines given (indented for the container).
func podWith(container string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: app\n    image: img\n    ports: [{name: http, containerPort: 8080}]\n" + indent(container, 4)
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

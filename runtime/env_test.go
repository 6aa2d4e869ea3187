package runtime

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestExpandVars(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"A": "alpha", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	for _, tc := range []struct{ name, in, want string }{
		{"a defined name expands", "x$(A)y", "xalphay"},
		{"an undefined name stays as written", "$(NOPE)", "$(NOPE)"},
		{"an empty value expands to nothing", "[$(EMPTY)]", "[]"},
		{"$$ escapes a dollar", "$$(A)", "$(A)"},
		{"a lone dollar stays", "cost $5 $", "cost $5 $"},
		{"an unclosed reference stays", "$(A", "$(A"},
		{"several references", "$(A)-$(A)", "alpha-alpha"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := expandVars(tc.in, lookup); got != tc.want {
				t.Errorf("expandVars(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func FuzzExpandVars(f *testing.F) {
	for _, s := range []string{"$(A)", "$$", "$(", "x$(A)$(B)$", "$$$(A)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// With nothing defined, only an escaped $$ changes.
		got := expandVars(s, func(string) (string, bool) { return "", false })
		if !strings.Contains(s, "$$") && got != s {
			t.Errorf("expandVars(%q) with no variables = %q, want it unchanged", s, got)
		}
		if len(got) > len(s) {
			t.Errorf("expandVars(%q) grew to %q with no variables", s, got)
		}
		// Defined as empty, every complete reference disappears.
		empty := expandVars(s, func(string) (string, bool) { return "", true })
		if !strings.Contains(s, "$$") && strings.Contains(empty, "$(") && strings.Contains(empty[strings.Index(empty, "$("):], ")") {
			t.Errorf("expandVars(%q) with empty variables left a reference: %q", s, empty)
		}
	})
}

func FuzzFieldRef(f *testing.F) {
	for _, s := range []string{"metadata.labels['app']", `metadata.annotations["a.b/c"]`, "metadata.labels[", "status.podIP", "metadata.labels['']"} {
		f.Add(s)
	}
	info := podInfo{name: "p", labels: map[string]string{"app": "web"}}
	f.Fuzz(func(t *testing.T, fp string) {
		_, err := fieldRefValue(fp, info, field.NewPath("env"))
		if err != nil && !strings.Contains(err.Error(), "env") {
			t.Errorf("error %q does not name the field", err)
		}
	})
}

func TestResolveEnv(t *testing.T) {
	t.Parallel()
	info := podInfo{
		name: "web-1", namespace: "shop", uid: "u-1",
		labels:      map[string]string{"app": "web", "tier": "front"},
		annotations: map[string]string{"note": "hi"},
		nodeName:    "node", serviceAccount: "sa", podIP: "127.0.1.7", hostIP: HostIP,
	}
	fieldRef := func(fp string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: fp}}
	}
	yes := true
	c := &corev1.Container{
		Env: []corev1.EnvVar{
			{Name: "NAME", ValueFrom: fieldRef("metadata.name")},
			{Name: "NS", ValueFrom: fieldRef("metadata.namespace")},
			{Name: "APP", ValueFrom: fieldRef("metadata.labels['app']")},
			{Name: "NOTE", ValueFrom: fieldRef(`metadata.annotations["note"]`)},
			{Name: "IP", ValueFrom: fieldRef("status.podIP")},
			{Name: "HOST", ValueFrom: fieldRef("status.hostIP")},
			{Name: "LABELS", ValueFrom: fieldRef("metadata.labels")},
			{Name: "URL", Value: "http://$(IP):$(PORT)/$(NAME)"},
			{Name: "LATER", Value: "$(DEFINED_LATER)"},
			{Name: "DEFINED_LATER", Value: "x"},
			{Name: "OPT", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "k", Optional: &yes}}},
			{Name: "CPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "PORT", Value: "9000"},
		},
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
	}
	env, errs := resolveEnv([]envVar{{"PATH", "/bin"}}, []envVar{{EnvPodIP, info.podIP}, {"PORT", "8080"}}, c, info, field.NewPath("spec", "containers").Index(0))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := map[string]string{
		"PATH": "/bin", "POD_IP": "127.0.1.7", "NAME": "web-1", "NS": "shop", "APP": "web", "NOTE": "hi",
		"IP": "127.0.1.7", "HOST": HostIP, "LABELS": "app=\"web\"\ntier=\"front\"",
		"URL":   "http://127.0.1.7:8080/web-1", // $(PORT) is podgate's 8080 at that point
		"LATER": "$(DEFINED_LATER)", "DEFINED_LATER": "x",
		"CPU": "2", "MEM": "64", "PORT": "9000",
	}
	for k, v := range want {
		if got, ok := env.get(k); !ok || got != v {
			t.Errorf("%s = %q (set %v), want %q", k, got, ok, v)
		}
	}
	if _, ok := env.get("OPT"); ok {
		t.Error("a missing optional ConfigMap key must leave the variable unset")
	}
	if got := env.strings(); got[len(got)-1] != "MEM=64" || !strings.HasPrefix(got[2], "PORT=") {
		// PORT keeps its first position when the container replaces it.
		t.Errorf("order: %v", got)
	}
}

func TestResolveEnvErrorsNameTheField(t *testing.T) {
	t.Parallel()
	c := &corev1.Container{
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
		Env: []corev1.EnvVar{
			{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "pw"}}},
			{Name: "F", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.hostname"}}},
		},
	}
	_, errs := resolveEnv(nil, nil, c, podInfo{}, field.NewPath("spec", "containers").Index(1))
	got := errs.ToAggregate().Error()
	for _, want := range []string{
		`spec.containers[1].envFrom[0].configMapRef: Unsupported value: "cfg"`,
		`spec.containers[1].env[0].valueFrom.secretKeyRef: Unsupported value: "db"`,
		`spec.containers[1].env[1].valueFrom.fieldRef.fieldPath: Unsupported value: "spec.hostname"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors %q lack %q", got, want)
		}
	}
}

func TestImageEntrypoints(t *testing.T) {
	t.Parallel()
	im := Images{Self: "/opt/podgate"}
	im.Set("ghcr.io/podgate/testapp", "/bin/testapp", "testapp")
	im.Set("registry:5000/api", "/bin/api")
	path := field.NewPath("spec", "containers").Index(0)
	for _, tc := range []struct {
		name    string
		image   string
		command []string
		args    []string
		want    string
		wantErr string
	}{
		{"a command replaces the entrypoint", "ghcr.io/podgate/testapp", []string{"sh", "-c"}, []string{"true"}, "sh -c true", ""},
		{"an image without a command runs its entrypoint with args", "ghcr.io/podgate/testapp", nil, []string{"--port", "1"}, "/bin/testapp testapp --port 1", ""},
		{"the command podgate is this binary", "ghcr.io/podgate/podgate", []string{"podgate"}, []string{"gate"}, "/opt/podgate gate", ""},
		{"a tag is ignored", "ghcr.io/podgate/testapp:v1.2", nil, nil, "/bin/testapp testapp", ""},
		{"a digest is ignored", "ghcr.io/podgate/testapp@sha256:abc", nil, nil, "/bin/testapp testapp", ""},
		{"a registry port is not a tag", "registry:5000/api:latest", nil, nil, "/bin/api", ""},
		{"an unknown image without a command is an error naming the flag", "nginx:1.27", nil, nil, "",
			`spec.containers[0].command: Required value: image "nginx:1.27" has no local entrypoint`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			argv, err := im.argv(tc.image, tc.command, tc.args, path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "--image nginx=") {
					t.Fatalf("err = %v, want %q and a --image hint", err, tc.wantErr)
				}
				return
			}
			if err != nil || strings.Join(argv, " ") != tc.want {
				t.Errorf("argv = %q, %v; want %q", argv, err, tc.want)
			}
		})
	}
}

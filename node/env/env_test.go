package env

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/internal/expansion"
)

// expandIn resolves a container whose env defines A=alpha, EMPTY="" and
// then X=s, and returns X: $(VAR) expansion in env values.
func expandIn(t *testing.T, s string) string {
	t.Helper()
	c := &corev1.Container{Env: []corev1.EnvVar{{Name: "A", Value: "alpha"}, {Name: "EMPTY"}, {Name: "X", Value: s}}}
	l, errs := Resolve(nil, nil, c, PodInfo{}, field.NewPath("spec", "containers").Index(0))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	got, _ := l.Get("X")
	return got
}

func TestEnvValuesExpandVars(t *testing.T) {
	t.Parallel()
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
			if got := expandIn(t, tc.in); got != tc.want {
				t.Errorf("X=%q expands to %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func FuzzEnvValuesExpandVars(f *testing.F) {
	for _, s := range []string{"$(A)", "$$", "$(", "x$(A)$(B)$", "$$$(A)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// With nothing defined before it, only an escaped $$ changes.
		c := &corev1.Container{Env: []corev1.EnvVar{{Name: "X", Value: s}}}
		l, errs := Resolve(nil, nil, c, PodInfo{}, field.NewPath("spec"))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		got, _ := l.Get("X")
		if !strings.Contains(s, "$$") && got != s {
			t.Errorf("X=%q with no variables = %q, want it unchanged", s, got)
		}
		if len(got) > len(s) {
			t.Errorf("X=%q grew to %q with no variables", s, got)
		}
		// Defined as empty, every complete reference disappears (the
		// expander env values go through, with every name defined).
		empty := expansion.Expand(s, func(string) (string, bool) { return "", true })
		if !strings.Contains(s, "$$") && strings.Contains(empty, "$(") && strings.Contains(empty[strings.Index(empty, "$("):], ")") {
			t.Errorf("%q with empty variables left a reference: %q", s, empty)
		}
	})
}

func FuzzFieldRef(f *testing.F) {
	for _, s := range []string{"metadata.labels['app']", `metadata.annotations["a.b/c"]`, "metadata.labels[", "status.podIP", "metadata.labels['']"} {
		f.Add(s)
	}
	info := PodInfo{Name: "p", Labels: map[string]string{"app": "web"}}
	f.Fuzz(func(t *testing.T, fp string) {
		_, err := fieldRefValue(fp, info, field.NewPath("env"))
		if err != nil && !strings.Contains(err.Error(), "env") {
			t.Errorf("error %q does not name the field", err)
		}
	})
}

func TestResolveEnv(t *testing.T) {
	t.Parallel()
	const hostIP = "127.0.0.1"
	info := PodInfo{
		Name: "web-1", Namespace: "shop", UID: "u-1",
		Labels:      map[string]string{"app": "web", "tier": "front"},
		Annotations: map[string]string{"note": "hi"},
		NodeName:    "node", ServiceAccount: "sa", PodIP: "127.0.1.7", HostIP: hostIP,
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
	env, errs := Resolve([]Var{{"PATH", "/bin"}}, []Var{{"POD_IP", info.PodIP}, {"PORT", "8080"}}, c, info, field.NewPath("spec", "containers").Index(0))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := map[string]string{
		"PATH": "/bin", "POD_IP": "127.0.1.7", "NAME": "web-1", "NS": "shop", "APP": "web", "NOTE": "hi",
		"IP": "127.0.1.7", "HOST": hostIP, "LABELS": "app=\"web\"\ntier=\"front\"",
		"URL":   "http://127.0.1.7:8080/web-1", // $(PORT) is podgate's 8080 at that point
		"LATER": "$(DEFINED_LATER)", "DEFINED_LATER": "x",
		"CPU": "2", "MEM": "64", "PORT": "9000",
	}
	for k, v := range want {
		if got, ok := env.Get(k); !ok || got != v {
			t.Errorf("%s = %q (set %v), want %q", k, got, ok, v)
		}
	}
	if _, ok := env.Get("OPT"); ok {
		t.Error("a missing optional ConfigMap key must leave the variable unset")
	}
	if got := env.Strings(); got[len(got)-1] != "MEM=64" || !strings.HasPrefix(got[2], "PORT=") {
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
	_, errs := Resolve(nil, nil, c, PodInfo{}, field.NewPath("spec", "containers").Index(1))
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

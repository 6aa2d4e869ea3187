package containerconfig

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/node/env"
)

func TestResolveAsTheKubeletBeforeCreate(t *testing.T) {
	t.Parallel()
	r := Resolver{Base: []env.Var{{Name: "PATH", Value: "/usr/bin:/bin"}}, WorkDir: "/node/work"}
	info := env.PodInfo{Name: "web-1", Namespace: "ns", PodIP: "10.0.0.7"}
	for _, tc := range []struct {
		name     string
		spec     corev1.Container
		extra    []env.Var
		wantArgv []string
		wantDir  string
		wantErrs int
		// wantAbsent: the image is not on the node (kept apart from
		// Errs: the container waits for its image first).
		wantAbsent bool
	}{
		{name: "HOSTNAME and POD_IP are expanded in the command line",
			spec:     corev1.Container{Name: "c", Command: []string{"/bin/echo"}, Args: []string{"$(HOSTNAME)", "$(POD_IP)"}},
			wantArgv: []string{"/bin/echo", "web-1", "10.0.0.7"}, wantDir: "/node/work"},
		{name: "the container's env replaces POD_IP",
			spec:     corev1.Container{Name: "c", Command: []string{"/bin/echo", "$(POD_IP)"}, Env: []corev1.EnvVar{{Name: "POD_IP", Value: "mine"}}},
			wantArgv: []string{"/bin/echo", "mine"}, wantDir: "/node/work"},
		{name: "the node's extras come after the injected ones",
			spec:     corev1.Container{Name: "c", Command: []string{"/bin/echo", "$(EXTRA)"}},
			extra:    []env.Var{{Name: "EXTRA", Value: "x"}},
			wantArgv: []string{"/bin/echo", "x"}, wantDir: "/node/work"},
		{name: "workingDir wins over the node's directory",
			spec:     corev1.Container{Name: "c", Command: []string{"/bin/true"}, WorkingDir: "/tmp"},
			wantArgv: []string{"/bin/true"}, wantDir: "/tmp"},
		{name: "an image the node does not have is kept as absent, not fatal",
			spec:    corev1.Container{Name: "c", Image: "no-such-image"},
			wantDir: "/node/work", wantAbsent: true},
		{name: "an image the node does not have with a problem of its own keeps both",
			spec:    corev1.Container{Name: "c", Image: "no-such-image", Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.nope"}}}}},
			wantDir: "/node/work", wantAbsent: true, wantErrs: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := r.Resolve(&tc.spec, field.NewPath("spec", "containers").Index(0), info, tc.extra, nil)
			if len(cfg.Errs) != tc.wantErrs {
				t.Fatalf("errors %v, want %d", cfg.Errs, tc.wantErrs)
			}
			if (cfg.Absent != nil) != tc.wantAbsent {
				t.Fatalf("absent %v, want %v", cfg.Absent, tc.wantAbsent)
			}
			if tc.wantErrs == 0 && !tc.wantAbsent && !slices.Equal(cfg.Argv, tc.wantArgv) {
				t.Errorf("argv %q, want %q", cfg.Argv, tc.wantArgv)
			}
			if cfg.Dir != tc.wantDir {
				t.Errorf("dir %q, want %q", cfg.Dir, tc.wantDir)
			}
			if cfg.Exec == nil || cfg.Env == nil {
				t.Errorf("no executor or environment: %+v", cfg)
			}
		})
	}
}

func TestABlockedContainerWaitsWithItsProblems(t *testing.T) {
	t.Parallel()
	p := field.NewPath("spec", "containers").Index(0)
	one := field.Required(p.Child("image"), "no entrypoint")
	two := field.Invalid(p.Child("env").Index(0), "X", "bad")
	for _, tc := range []struct {
		name        string
		errs        field.ErrorList
		wantBlocked bool
		wantMessage string
	}{
		{"no problem: it starts", nil, false, ""},
		{"one problem is its own message", field.ErrorList{one}, true, one.Error()},
		{"several are listed together", field.ErrorList{one, two}, true, "[" + one.Error() + ", " + two.Error() + "]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Errs: tc.errs}
			if c.Blocked() != tc.wantBlocked {
				t.Fatalf("Blocked = %v, want %v", c.Blocked(), tc.wantBlocked)
			}
			if tc.wantBlocked && c.Message() != tc.wantMessage {
				t.Fatalf("Message = %q, want %q", c.Message(), tc.wantMessage)
			}
		})
	}
}

func TestPodResolvesInitContainersThenContainersAtTheirPaths(t *testing.T) {
	t.Parallel()
	r := Resolver{Base: []env.Var{{Name: "PATH", Value: "/usr/bin:/bin"}}, WorkDir: "/node/work"}
	info := env.PodInfo{Name: "web-1", Namespace: "ns", PodIP: "10.0.0.7"}
	ok := func(name string) corev1.Container {
		return corev1.Container{Name: name, Command: []string{"/bin/echo", name}}
	}
	bad := func(name string) corev1.Container { return corev1.Container{Name: name, Image: "no-such-image"} }
	for _, tc := range []struct {
		name      string
		spec      corev1.PodSpec
		wantInits []string // each one's argv[1]
		wantMains []string
		wantErrs  []string // the problems' field paths, in order
	}{
		{"containers only", corev1.PodSpec{Containers: []corev1.Container{ok("a"), ok("b")}}, nil, []string{"a", "b"}, nil},
		{"init containers first", corev1.PodSpec{InitContainers: []corev1.Container{ok("i")}, Containers: []corev1.Container{ok("a")}},
			[]string{"i"}, []string{"a"}, nil},
		{"every problem at its own path, init containers first",
			corev1.PodSpec{InitContainers: []corev1.Container{bad("i")}, Containers: []corev1.Container{ok("a"), bad("b")}},
			[]string{""}, []string{"a", ""}, []string{"spec.initContainers[0].command", "spec.containers[1].command"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inits, mains, errs := r.Pod(field.NewPath("spec"), &tc.spec, info, nil, nil)
			argv1 := func(cs []Config) []string {
				var out []string
				for _, c := range cs {
					if len(c.Argv) > 1 {
						out = append(out, c.Argv[1])
					} else {
						out = append(out, "")
					}
				}
				return out
			}
			if got := argv1(inits); !slices.Equal(got, tc.wantInits) {
				t.Errorf("init containers %q, want %q", got, tc.wantInits)
			}
			if got := argv1(mains); !slices.Equal(got, tc.wantMains) {
				t.Errorf("containers %q, want %q", got, tc.wantMains)
			}
			var paths []string
			for _, e := range errs {
				paths = append(paths, e.Field)
			}
			if !slices.Equal(paths, tc.wantErrs) {
				t.Errorf("problems at %q, want %q", paths, tc.wantErrs)
			}
		})
	}
}

func TestCheckReportsWhatWouldKeepAPodsContainersFromStarting(t *testing.T) {
	t.Parallel()
	r := Resolver{Base: []env.Var{{Name: "PATH", Value: "/usr/bin:/bin"}}, WorkDir: "/node/work"}
	specPath := field.NewPath("spec", "template", "spec")
	for _, tc := range []struct {
		name      string
		container corev1.Container
		want      []string // the fields of the problems
	}{
		{"a container with a command starts", corev1.Container{Name: "app", Image: "example.com/app", Command: []string{"/bin/true"}}, nil},
		{"an image without a local entrypoint does not", corev1.Container{Name: "app", Image: "example.com/app"},
			[]string{"spec.template.spec.containers[0].command"}},
		{"nor a variable from a Secret, which exists only in a cluster", corev1.Container{Name: "app", Image: "example.com/app", Command: []string{"/bin/true"},
			Env: []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}}},
			[]string{"spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{tc.container}}}
			errs := r.Check(pod, specPath, "node-1", "127.0.0.1")
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("problems %v at %q, want %q", errs, got, tc.want)
			}
		})
	}
}

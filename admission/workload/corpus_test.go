package workload_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/admission/inject"
	"github.com/podgate/podgate/admission/validation"
	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ from the current output")

const corpus = "../testdata"

// check loads one file and validates what it holds, as `podgate validate`
// does, naming the file by its base name so goldens do not depend on the
// working directory.
func check(t *testing.T, path string) (*workload.Manifests, workload.Problems) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := workload.Load(f, filepath.Base(path))
	var problems workload.Problems
	if err != nil && !errors.As(err, &problems) {
		t.Fatalf("Load(%s): %v", path, err)
	}
	for _, w := range m.Workloads {
		problems = append(problems, w.Problems(validation.Validate(w))...)
	}
	workload.SortProblems(problems)
	return m, problems
}

func manifestFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"*.yaml", "*.json"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatalf("no manifests in %s", dir)
	}
	return files
}

// golden compares got with the golden file, or rewrites it under -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./admission/workload -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output:\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

func stem(path string) string {
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}

func TestInvalidManifestsReportTheirGoldenErrors(t *testing.T) {
	files := manifestFiles(t, filepath.Join(corpus, "invalid"))
	if len(files) < 30 {
		t.Errorf("only %d invalid manifests in the corpus, want at least 30", len(files))
	}
	for _, f := range files {
		t.Run(stem(f), func(t *testing.T) {
			_, problems := check(t, f)
			if len(problems) == 0 {
				t.Fatal("no problem reported for an invalid manifest")
			}
			var b bytes.Buffer
			for _, p := range problems {
				b.WriteString(p.Error())
				b.WriteByte('\n')
			}
			golden(t, strings.TrimSuffix(f, filepath.Ext(f))+".golden", b.Bytes())
		})
	}
}

// testAdminToken stands for the fresh random admin token of each
// injection, so the goldens stay the same.
const testAdminToken = "00000000000000000000000000000000"

func TestValidManifestsInjectToTheirGoldens(t *testing.T) {
	for _, f := range manifestFiles(t, filepath.Join(corpus, "valid")) {
		t.Run(stem(f), func(t *testing.T) {
			m, problems := check(t, f)
			if len(problems) > 0 {
				t.Fatalf("valid manifest reported:\n%v", problems)
			}
			if len(m.Workloads) == 0 {
				t.Fatal("no workload loaded")
			}
			for _, mode := range []struct {
				suffix string
				opts   inject.Options
			}{{".yaml", inject.Options{AdminToken: testAdminToken}}, {".local.yaml", inject.Options{Local: true, AdminToken: testAdminToken}}} {
				injected := injectAll(t, m.Workloads, mode.opts)
				var b bytes.Buffer
				if err := workload.WriteYAML(&b, injected); err != nil {
					t.Fatal(err)
				}
				golden(t, filepath.Join(corpus, "inject", stem(f)+mode.suffix), b.Bytes())
				assertInjectedRoundTrip(t, b.Bytes(), injected, mode.opts)
			}
			// The regular-container mode for older clusters: no goldens,
			// but it must be as idempotent and round-trip as cleanly.
			for _, opts := range []inject.Options{{GateAsContainer: true, AdminToken: testAdminToken}, {GateAsContainer: true, Local: true, AdminToken: testAdminToken}} {
				injected := injectAll(t, m.Workloads, opts)
				var b bytes.Buffer
				if err := workload.WriteYAML(&b, injected); err != nil {
					t.Fatal(err)
				}
				assertInjectedRoundTrip(t, b.Bytes(), injected, opts)
			}
		})
	}
}

func TestExamplesAreValidAndInjectable(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) < 8 {
		t.Fatalf("examples: %v (%d files, want hello.yaml and the seven seed scenarios)", err, len(files))
	}
	for _, f := range files {
		t.Run(stem(f), func(t *testing.T) {
			m, problems := check(t, f)
			if len(problems) > 0 {
				t.Fatalf("example reported:\n%v", problems)
			}
			for _, w := range m.Workloads {
				for _, c := range w.PodSpec().Containers {
					if c.Image != "ghcr.io/podgate/testapp" {
						t.Errorf("container %s runs %q, examples run the test app", c.Name, c.Image)
					}
				}
			}
			for _, opts := range []inject.Options{{}, {Local: true}, {GateAsContainer: true}} {
				injected := injectAll(t, m.Workloads, opts)
				var b bytes.Buffer
				if err := workload.WriteYAML(&b, injected); err != nil {
					t.Fatal(err)
				}
				assertInjectedRoundTrip(t, b.Bytes(), injected, opts)
			}
		})
	}
}

// injectAll injects every workload and checks that injecting again
// changes nothing.
func injectAll(t *testing.T, ws []*workload.Workload, opts inject.Options) []*workload.Workload {
	t.Helper()
	var out []*workload.Workload
	for _, w := range ws {
		once, err := inject.Gate(w, opts)
		if err != nil {
			t.Fatalf("Inject(%s): %v", w.ID(), err)
		}
		twice, err := inject.Gate(once, opts)
		if err != nil {
			t.Fatalf("Inject(Inject(%s)): %v", w.ID(), err)
		}
		if !reflect.DeepEqual(once, twice) {
			t.Errorf("injecting %s twice changed it", w.ID())
		}
		if reflect.DeepEqual(once.Template, w.Template) {
			t.Errorf("Inject(%s) left the pod unchanged", w.ID())
		}
		out = append(out, once)
	}
	return out
}

// assertInjectedRoundTrip: the printed injected manifests load and
// validate clean, injecting them again prints the same, and the gate's
// environment decodes with the gate's own decoder.
func assertInjectedRoundTrip(t *testing.T, printed []byte, injected []*workload.Workload, opts inject.Options) {
	t.Helper()
	m, err := workload.Load(bytes.NewReader(printed), "injected.yaml")
	if err != nil {
		t.Fatalf("injected output does not load: %v", err)
	}
	if len(m.Workloads) != len(injected) {
		t.Fatalf("injected output holds %d workloads, want %d", len(m.Workloads), len(injected))
	}
	var again []*workload.Workload
	for _, w := range m.Workloads {
		if errs := validation.Validate(w); len(errs) > 0 {
			t.Errorf("injected %s does not validate: %v", w.ID(), errs)
		}
		if !w.IsInjected() {
			t.Errorf("reloaded %s is not recognised as injected", w.ID())
		}
		iw, err := inject.Gate(w, opts)
		if err != nil {
			t.Fatal(err)
		}
		again = append(again, iw)
		assertGateEnvDecodes(t, iw, opts)
	}
	var b bytes.Buffer
	if err := workload.WriteYAML(&b, again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), printed) {
		t.Errorf("injecting the printed output again changed it:\n--- first\n%s\n--- again\n%s", printed, b.Bytes())
	}
}

// assertGateEnvDecodes resolves the gate's environment as the node agent
// or kubelet would (downward API fields get a pod's values) and decodes it.
func assertGateEnvDecodes(t *testing.T, w *workload.Workload, opts inject.Options) {
	t.Helper()
	gate := w.Container(contract.GateContainerName)
	if gate == nil {
		t.Fatalf("%s has no gate container", w.ID())
	}
	env := resolveEnv(t, gate.Env, map[string]string{"metadata.name": w.Name + "-pod", "status.podIP": "127.0.1.7", "status.hostIP": "10.0.0.9"})
	cfg, err := contract.Decode(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("%s: gate env does not decode: %v", w.ID(), err)
	}
	if cfg.UserPort != int(w.ServingPort) {
		t.Errorf("%s: USER_PORT %d, want the serving port %d", w.ID(), cfg.UserPort, w.ServingPort)
	}
	if len(cfg.Containers) == 0 || cfg.Containers[0] != w.ServingContainer {
		t.Errorf("%s: PODGATE_CONTAINERS %v, want the serving container %s first", w.ID(), cfg.Containers, w.ServingContainer)
	}
	// Knative checks the serving container on its port; a Pod's may
	// have no readiness probe in the gate at all.
	if w.Knative != nil && (len(cfg.ReadinessProbes) == 0 || cfg.ReadinessContainers[0] != w.ServingContainer) {
		t.Errorf("%s: first readiness probe belongs to %v, want the serving container %s", w.ID(), cfg.ReadinessContainers, w.ServingContainer)
	}
	wantHost := "127.0.0.1"
	if opts.Local {
		wantHost = "127.0.1.7"
	}
	if cfg.UpstreamHost != wantHost {
		t.Errorf("%s: upstream host %q, want %q", w.ID(), cfg.UpstreamHost, wantHost)
	}
	// On a cluster the gate asks the node status service on its node's
	// address: PODGATE_HOST_IP comes before the status source, or the
	// kubelet would leave $(PODGATE_HOST_IP) unexpanded.
	if wantSource := "http://10.0.0.9:9026"; !opts.Local && cfg.StatusSource != wantSource {
		t.Errorf("%s: status source %q, want the node status service %q", w.ID(), cfg.StatusSource, wantSource)
	}
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

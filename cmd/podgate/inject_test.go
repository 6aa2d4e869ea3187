package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
)

// Helpers here carry an inject prefix: the package's other test files
// belong to other subcommands.

func injectRun(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(append([]string{"inject"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// testAdminToken is the goldens' admin token (each injection's is fresh
// and random unless --admin-token names one).
const testAdminToken = "00000000000000000000000000000000"

func TestInjectPrintsTheGoldenManifests(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		golden string
	}{
		{[]string{"--admin-token", testAdminToken, "-f", "../../admission/testdata/valid/05-two-containers-liveness.yaml"}, "05-two-containers-liveness.yaml"},
		{[]string{"--admin-token", testAdminToken, "--local", "-f", "../../admission/testdata/valid/07-sidecar-exec-readiness.yaml"}, "07-sidecar-exec-readiness.local.yaml"},
		{[]string{"--admin-token", testAdminToken, "-f", "../../admission/testdata/valid/15-multi-doc.yaml"}, "15-multi-doc.yaml"},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			code, stdout, stderr := injectRun(tc.args...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			want, err := os.ReadFile(filepath.Join("../../admission/testdata/inject", tc.golden))
			if err != nil {
				t.Fatal(err)
			}
			// The CLI passes other objects through; the golden holds the
			// workloads only. Compare the workload documents. The goldens
			// are the webhook's injection, which names the namespace;
			// on a cluster the CLI's gate reads it from its pod instead
			// (TestInjectGateReadsItsPodsNamespace), the one difference.
			if got := injectWorkloadDocs(t, stdout, !slices.Contains(tc.args, "--local")); got != string(want) {
				t.Errorf("output differs from %s:\n%s", tc.golden, stdout)
			}
		})
	}
}

// injectWorkloadDocs reloads printed manifests and re-renders only the
// workloads, in order. With literalNamespace, the gate's SERVING_NAMESPACE,
// which must come from the pod (the downward API's metadata.namespace), is
// written as the webhook writes it: the workload's namespace.
func injectWorkloadDocs(t *testing.T, printed string, literalNamespace bool) string {
	t.Helper()
	m, err := workload.Load(strings.NewReader(printed), "out.yaml")
	if err != nil {
		t.Fatalf("output does not load: %v", err)
	}
	for _, w := range m.Workloads {
		if !literalNamespace {
			break
		}
		gate := w.Container(contract.GateContainerName)
		i := slices.IndexFunc(gate.Env, func(e corev1.EnvVar) bool { return e.Name == contract.EnvServingNamespace })
		if i < 0 || gate.Env[i].ValueFrom == nil || gate.Env[i].ValueFrom.FieldRef == nil || gate.Env[i].ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
			t.Fatalf("%s: the gate's %s is not its pod's metadata.namespace: %+v", w.ID(), contract.EnvServingNamespace, gate.Env)
		}
		gate.Env[i] = corev1.EnvVar{Name: contract.EnvServingNamespace, Value: w.Namespace}
	}
	var b bytes.Buffer
	if err := workload.WriteYAML(&b, m.Workloads); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestInjectPassesOtherObjectsThroughInOrder(t *testing.T) {
	code, stdout, _ := injectRun("-f", "../../admission/testdata/valid/12-list.json")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	docs := strings.Split(stdout, "---\n")
	if len(docs) != 2 || !strings.Contains(docs[0], "kind: ConfigMap") || !strings.Contains(docs[0], "greeting: hi") ||
		!strings.Contains(docs[1], "name: podgate") {
		t.Errorf("output:\n%s", stdout)
	}
}

func TestInjectFlags(t *testing.T) {
	code, stdout, _ := injectRun("--gate-image", "registry.test/gate:v2", "--local", "--api", "127.0.0.1:9911", "-f", "../../examples/hello.yaml")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"image: registry.test/gate:v2", "value: http://127.0.0.1:9911", "name: PODGATE_UPSTREAM_HOST"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if _, stdout, _ = injectRun("-f", "../../examples/hello.yaml"); strings.Contains(stdout, "PODGATE_UPSTREAM_HOST") || !strings.Contains(stdout, "value: http://$(PODGATE_HOST_IP):9026") {
		t.Errorf("Kubernetes mode output:\n%s", stdout)
	}
}

func TestInjectOutputIsStable(t *testing.T) {
	_, first, _ := injectRun("-f", "../../examples/multi-container-readiness.yaml")
	path := filepath.Join(t.TempDir(), "injected.yaml")
	if err := os.WriteFile(path, []byte(first), 0o644); err != nil {
		t.Fatal(err)
	}
	code, second, stderr := injectRun("-f", path)
	if code != exitOK || second != first {
		t.Errorf("injecting the output again (exit %d, %s) changed it:\n%s\n---\n%s", code, stderr, first, second)
	}
}

func TestInjectRejectsInvalidInput(t *testing.T) {
	code, stdout, stderr := injectRun("-f", "../../admission/testdata/invalid/liveness-success-threshold.yaml")
	if code != exitInvalid || stdout != "" {
		t.Errorf("exit %d, stdout %q: want 1 and nothing printed", code, stdout)
	}
	if !strings.Contains(stderr, "livenessProbe.successThreshold: Invalid value: 2: must be 1") {
		t.Errorf("stderr %q", stderr)
	}
	for _, args := range [][]string{nil, {"-f", "x.yaml", "--gate-image", ""}, {"--nope"}} {
		if code, _, _ := injectRun(args...); code != exitUsage {
			t.Errorf("inject %v: exit %d, want 2", args, code)
		}
	}
}

func TestInjectGateAsContainer(t *testing.T) {
	load := func(args ...string) *corev1.PodSpec {
		t.Helper()
		code, stdout, stderr := injectRun(args...)
		if code != exitOK {
			t.Fatalf("inject %v: exit %d: %s", args, code, stderr)
		}
		m, err := workload.Load(strings.NewReader(stdout), "out.yaml")
		if err != nil || len(m.Workloads) != 1 {
			t.Fatalf("output does not load: %v\n%s", err, stdout)
		}
		return m.Workloads[0].PodSpec()
	}
	native := load("-f", "../../examples/hello.yaml")
	if len(native.InitContainers) != 1 || native.InitContainers[0].Name != "podgate" || native.InitContainers[0].RestartPolicy == nil {
		t.Errorf("default: init containers %+v, want the gate as a native sidecar", native.InitContainers)
	}
	regular := load("--gate-as-container", "-f", "../../examples/hello.yaml")
	if len(regular.InitContainers) != 0 || regular.Containers[0].Name != "podgate" || regular.Containers[0].StartupProbe != nil {
		t.Errorf("--gate-as-container: init containers %d, first container %s: want the gate first among the containers",
			len(regular.InitContainers), regular.Containers[0].Name)
	}
}

// TestInjectGateReadsItsPodsNamespace pins what `podgate inject -f x.yaml |
// kubectl apply -n shop -f -` needs: the gate must ask for its own pod,
// in the namespace the pod was applied to, not the manifest's (or
// "default" when it names none). Locally (--local) podgate run knows the
// namespace, and the literal stays.
func TestInjectGateReadsItsPodsNamespace(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		fromPod bool
		literal string
	}{
		{"a manifest without namespace, for a cluster", []string{"-f", "../../examples/hello.yaml"}, true, ""},
		{"a manifest naming its namespace, for a cluster", []string{"-f", "../../admission/testdata/valid/11-deployment.yaml"}, true, ""},
		{"for podgate run", []string{"--local", "-f", "../../examples/hello.yaml"}, false, "default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := injectRun(tc.args...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			m, err := workload.Load(strings.NewReader(stdout), "out.yaml")
			if err != nil || len(m.Workloads) == 0 {
				t.Fatalf("output does not load: %v", err)
			}
			for _, w := range m.Workloads {
				gate := w.Container(contract.GateContainerName)
				i := slices.IndexFunc(gate.Env, func(e corev1.EnvVar) bool { return e.Name == contract.EnvServingNamespace })
				if i < 0 {
					t.Fatalf("%s: no %s", w.ID(), contract.EnvServingNamespace)
				}
				e := gate.Env[i]
				fromPod := e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace"
				if fromPod != tc.fromPod || (!tc.fromPod && e.Value != tc.literal) {
					t.Errorf("%s: %s = %+v, want from the pod %v (literal %q)", w.ID(), contract.EnvServingNamespace, e, tc.fromPod, tc.literal)
				}
			}
		})
	}
}

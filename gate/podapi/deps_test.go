package podapi

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGateAndActivatorReadTheAPIThroughClientGo pins the layering: the
// gate and the activator read pods and endpoints only through client-go,
// so the same code runs against podgate run's control API and a real API
// server; neither may reach into the local object store.
func TestGateAndActivatorReadTheAPIThroughClientGo(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-deps", "./gate/...", "./activator/...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, want := range []string{"k8s.io/client-go/tools/cache", "k8s.io/client-go/rest"} {
		if !slices.Contains(deps, want) {
			t.Errorf("gate and activator do not depend on %s", want)
		}
	}
	for _, banned := range []string{"github.com/podgate/podgate/local/objstore", "github.com/podgate/podgate/local/apiserver"} {
		if slices.Contains(deps, banned) {
			t.Errorf("gate or activator depends on %s: they must read the API through client-go", banned)
		}
	}
	// The shared informer factory links every API group's informer into
	// the binary (it made podgate 89 MB instead of 75): one informer per
	// resource instead.
	if slices.Contains(deps, "k8s.io/client-go/informers") {
		t.Error("gate or activator depends on k8s.io/client-go/informers (the shared factory); use the per-resource informer packages")
	}
}

// TestTheGateLinksNoAPIGroupButCoreV1 pins what keeps the gate small:
// client-go's clientset, its typed clients and their scheme register every
// API group of Kubernetes when a process starts, which cost the gate —
// one in every pod — about 11 MB of resident memory.
func TestTheGateLinksNoAPIGroupButCoreV1(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-deps", "./gate/...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "k8s.io/client-go/kubernetes" || strings.HasPrefix(dep, "k8s.io/client-go/kubernetes/") ||
			strings.HasPrefix(dep, "k8s.io/client-go/applyconfigurations") || strings.HasPrefix(dep, "k8s.io/client-go/informers") {
			t.Errorf("the gate depends on %s, which registers every API group at start", dep)
		}
	}
}

package localcluster

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/podgate/podgate/"

// allowedDeps is the package table of docs/architecture.md: the module's
// packages each one may depend on (directly or not). Arrows point one
// way: the node agent never reaches the control plane or the commands,
// and the control plane reaches no part of the node agent.
var allowedDeps = map[string][]string{
	"expansion":               {},
	"wire":                    {},
	"specdecode":              {},
	"procgroup":               {},
	"internal/lint":           {},
	"objstore":                {},
	"podnet":                  {},
	"probe":                   {"expansion", "procgroup", "wire"},
	"prober":                  {"probe", "expansion", "procgroup", "wire", "specdecode"},
	"gateenv":                 {"specdecode", "wire"},
	"podspec":                 {"gateenv", "prober", "probe", "expansion", "procgroup", "wire", "specdecode"},
	"podspec/validation":      {"podspec", "gateenv", "prober", "probe", "expansion", "procgroup", "wire", "specdecode"},
	"podspec/inject":          {"podspec", "gateenv", "prober", "probe", "expansion", "procgroup", "wire", "specdecode"},
	"runtime/proc":            {"procgroup"},
	"runtime/queue":           {},
	"runtime/backoff":         {},
	"runtime/events":          {},
	"runtime/logbuf":          {},
	"runtime/kill":            {},
	"runtime/termination":     {},
	"runtime/restart":         {"runtime/backoff"},
	"runtime/startorder":      {},
	"runtime/podworkers":      {},
	"runtime/podwatch":        {"runtime/podstatus"},
	"runtime/containerconfig": {"runtime/env", "runtime/images", "podspec", "gateenv", "prober", "probe", "expansion", "procgroup", "wire", "specdecode"},
	"runtime/podlogs":         {"runtime/logbuf"},
	"runtime/env":             {"expansion"},
	"runtime/hooks":           {"probe", "expansion", "procgroup", "wire"},
	"runtime/images":          {"podspec", "gateenv", "prober", "probe", "expansion", "procgroup", "wire", "specdecode"},
	"runtime/podsetup":        {"runtime/env", "expansion"},
	"runtime/podprobes":       {"podspec", "gateenv", "prober", "probe", "expansion", "procgroup", "wire", "specdecode"},
	"runtime/podstatus":       {},
	"runtime/preflight":       {"podspec", "gateenv", "prober", "probe", "expansion", "procgroup", "wire", "specdecode"},
	"runtime/loopnet":         {},
	"runtime/podnetwork":      {"runtime/loopnet"},
	"runtime":                 {"runtime/kill", "runtime/termination", "runtime/restart", "runtime/startorder", "runtime/podworkers", "runtime/podwatch", "runtime/podnetwork", "runtime/containerconfig", "runtime/podlogs", "runtime/proc", "runtime/queue", "runtime/backoff", "runtime/events", "runtime/logbuf", "runtime/env", "runtime/hooks", "runtime/images", "runtime/podsetup", "runtime/podprobes", "runtime/podstatus", "runtime/preflight", "runtime/loopnet", "podspec", "gateenv", "prober", "probe", "expansion", "procgroup", "wire", "specdecode"},
	"podnet/nodenet":          {"runtime/kill", "runtime/termination", "runtime/restart", "runtime/startorder", "runtime/podworkers", "runtime/podwatch", "runtime/podnetwork", "runtime/containerconfig", "runtime/podlogs", "podnet", "runtime", "runtime/proc", "runtime/queue", "runtime/backoff", "runtime/events", "runtime/logbuf", "runtime/env", "runtime/hooks", "runtime/images", "runtime/podsetup", "runtime/podprobes", "runtime/podstatus", "runtime/preflight", "runtime/loopnet", "podspec", "gateenv", "prober", "probe", "expansion", "procgroup", "wire", "specdecode"},
	"localcluster":            {"objstore", "podspec", "gateenv", "prober", "probe", "expansion", "procgroup", "wire", "specdecode"},
	"api/resources":           {"objstore"},
	"api":                     {"api/resources", "objstore", "wire", "internal/loopback"},
	"apiclient":               {"api/resources", "objstore", "wire"},
	"gate/proxy":              {},
	"gate/drain":              {},
	"gate/metrics":            {"probe", "expansion", "procgroup", "wire"},
	"gate/readiness":          {"gateenv", "prober", "probe", "expansion", "procgroup", "wire", "specdecode"},
	"gate":                    {"gate/proxy", "gate/drain", "gate/metrics", "gate/readiness", "gateenv", "prober", "probe", "expansion", "procgroup", "wire", "specdecode"},
	"gate/podstatus":          {"gate", "gate/readiness", "internal/informers", "internal/kubeconfig", "gate/proxy", "gate/drain", "gate/metrics", "gateenv", "prober", "probe", "expansion", "procgroup", "wire", "specdecode"},
	"gate/gatemain":           {"gate", "gate/readiness", "internal/informers", "gate/podstatus", "internal/kubeconfig", "gate/proxy", "gate/drain", "gate/metrics", "gateenv", "prober", "probe", "expansion", "procgroup", "wire", "specdecode"},
	"gate/gatecli":            {"gate/gatemain", "internal/command", "gate", "gate/readiness", "internal/informers", "gate/podstatus", "internal/kubeconfig", "gate/proxy", "gate/drain", "gate/metrics", "gateenv", "prober", "probe", "expansion", "procgroup", "wire", "specdecode"},
	"cmd/podgate-gate":        {"gate/gatecli", "internal/buildinfo", "gate/gatemain", "internal/command", "gate", "gate/readiness", "internal/informers", "gate/podstatus", "internal/kubeconfig", "gate/proxy", "gate/drain", "gate/metrics", "gateenv", "prober", "probe", "expansion", "procgroup", "wire", "specdecode"},
	"internal/command":        {},
	"activator":               {"gateenv", "wire", "specdecode", "recording"},
	"activator/kubebackends":  {"activator", "internal/informers", "gateenv", "wire", "specdecode", "recording"},
	"activator/prommetrics":   {"activator", "gateenv", "wire", "specdecode", "recording"},
	"kubeactivator":           {"activator", "activator/kubebackends", "internal/informers", "activator/prommetrics", "gateenv", "wire", "specdecode", "recording"},
	"printers":                {"objstore"},
	"podctl":                  {"apiclient", "printers", "api/resources", "objstore", "wire"},
	"internal/k8sbin":         {},
	"controlplane":            {"internal/k8sbin", "internal/certs", "runtime/proc", "procgroup"},
	"kubenode/withdrawal":     {},
	"kubenode":                {"kubenode/withdrawal", "runtime/kill", "runtime/termination", "runtime/restart", "runtime/startorder", "runtime/podworkers", "runtime/podwatch", "runtime/podnetwork", "runtime/containerconfig", "runtime/podlogs", "runtime", "runtime/proc", "runtime/queue", "runtime/backoff", "runtime/events", "runtime/logbuf", "runtime/env", "runtime/hooks", "runtime/images", "runtime/podsetup", "runtime/podprobes", "runtime/podstatus", "runtime/preflight", "runtime/loopnet", "podspec", "gateenv", "prober", "probe", "expansion", "procgroup", "wire", "specdecode"},
	"cluster":                 {"kubenode/withdrawal", "cluster/install", "ociimage", "deploy", "runtime/kill", "runtime/termination", "runtime/restart", "runtime/startorder", "runtime/podworkers", "runtime/podwatch", "runtime/podnetwork", "runtime/containerconfig", "runtime/podlogs", "controlplane", "kubenode", "podnet", "podnet/nodenet", "internal/k8sbin", "internal/certs", "runtime", "runtime/proc", "runtime/queue", "runtime/backoff", "runtime/events", "runtime/logbuf", "runtime/env", "runtime/hooks", "runtime/images", "runtime/podsetup", "runtime/podprobes", "runtime/podstatus", "runtime/preflight", "runtime/loopnet", "podspec", "gateenv", "prober", "probe", "expansion", "procgroup", "wire", "specdecode"},
	"ociimage":                {},
	"recording":               {},
	"recording/kubewatch":     {"recording", "wire"},
	"timeline":                {"recording"},
	"timeline/render":         {"timeline", "recording"},
	"timeline/live":           {"timeline/render", "timeline", "recording", "internal/loopback"},
	"internal/headless":       {},
	"deploy":                  {},
	"cluster/install":         {"ociimage", "deploy", "podnet"},
	"lab/load":                {},
	"lab/manifest":            {"wire"},
	"lab/scenario":            {"specdecode"},
	"lab/labrun":              {"lab", "lab/load", "lab/scenario", "lab/manifest", "apiclient", "api/resources", "objstore", "recording", "timeline", "timeline/render", "specdecode", "wire"},
	"hack/image":              {"ociimage"},
	"internal/kubeconfig":     {},
	"internal/loopback":       {},
	"internal/informers":      {},
	"internal/certs":          {},
	"internal/buildinfo":      {},
	"internal/syncbuf":        {},
	"webhook":                 {"podspec", "podspec/validation", "podspec/inject", "internal/certs", "gateenv", "prober", "probe", "expansion", "procgroup", "wire", "specdecode"},

	// Test support: the timeline tests' recordings; the probe behaviours
	// table of both worlds.
	"timeline/internal/scenario": {"recording"},
	"internal/probeconformance":  {"runtime/images", "podspec", "gateenv", "prober", "probe", "expansion", "procgroup", "wire", "specdecode"},
}

// moduleDeps lists the module's packages pkg depends on, as `go list
// -deps` sees them (test files excluded, as in the binary).
func moduleDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+pkg).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	var deps []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if p, ok := strings.CutPrefix(line, module); ok && p != pkg {
			deps = append(deps, p)
		}
	}
	return deps
}

func TestPackagesImportOnlyWhatTheLayoutAllows(t *testing.T) {
	t.Parallel()
	for pkg, allowed := range allowedDeps {
		t.Run(pkg, func(t *testing.T) {
			t.Parallel()
			for _, dep := range moduleDeps(t, pkg) {
				if !slices.Contains(allowed, dep) {
					t.Errorf("%s depends on %s; docs/architecture.md allows only %v", pkg, dep, allowed)
				}
			}
		})
	}
}

func TestTheNodeAgentAndTheControlPlaneDoNotKnowEachOther(t *testing.T) {
	t.Parallel()
	forbidden := map[string][]string{
		"runtime":      {"localcluster", "cmd/", "api", "activator", "gate", "lab", "podnet"},
		"localcluster": {"runtime", "cmd/", "activator", "gate", "lab"},
		// The node on a cluster is the node agent and the API server's
		// client, nothing of the local control plane.
		"kubenode": {"localcluster", "objstore", "api", "controlplane", "cmd/", "activator", "gate", "lab"},
	}
	for pkg, bad := range forbidden {
		for _, dep := range moduleDeps(t, pkg) {
			for _, b := range bad {
				if dep == b || strings.HasPrefix(dep, strings.TrimSuffix(b, "/")+"/") {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}

package lint

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// update rewrites docs/architecture.md's generated part from parts and the
// package docs: go test ./internal/lint -run TestArchitectureDoc -update
var update = flag.Bool("update", false, "rewrite the generated section of docs/architecture.md")

const module = "github.com/podgate/podgate"

// part is one room of the house: a folder whose packages do one job, and
// the other parts they may import directly. A package belongs to the part
// with the longest folder that holds it, so a part may sit inside
// another's folder (gate/contract inside gate/) when it is the lower
// layer that others share.
type part struct {
	folder string
	job    string
	// mayImport are the other parts this part's packages may import
	// (its own packages may always import each other). Test files are
	// exempt: a node test may start the local control plane to watch the
	// node work.
	mayImport []string
}

// parts are the import rules of the module, stated once. Listed bottom
// up: a part may only import parts listed before it, so arrows point one
// way (TestPartsPointOneWay).
var parts = []part{
	{"internal", "helpers every part may share: certificates, kubeconfig lookup, informers that ring a bell, the loopback rule, the command runner, the version, the control-plane and Knative stack binaries, OCI images, `$(VAR)` expansion, process groups, the strict decoder, the proxies' fast HTTP/1.1 client; the module's own lint tests", nil},
	{"gate/contract", "the gate's contract with everything that starts or talks to it: its environment (Knative's queue-proxy variables and podgate's own), its ports, container name, probe paths and headers, the pod condition it writes", []string{"internal"}},
	{"record", "the recording format: the facts of a run on one time axis, a size-bounded writer, a strict reader, a live log", []string{"internal"}},
	{"test/testapp", "the toggle server the examples and tests run as their pods' program (`podgate testapp`)", nil},
	{"probe", "one probe attempt as the kubelet makes it (`probe`), and the workers with the kubelet's thresholds, defaults and grid (`probe/prober`)", []string{"gate/contract", "internal"}},
	{"admission/workload", "Pods, Deployments and Knative Services as manifests: loading with field paths, defaults", []string{"probe", "gate/contract", "internal"}},
	{"admission", "what a workload may be and the gate's place in it: validation with field paths, the gate's injection, the admission webhook", []string{"admission/workload", "probe", "gate/contract", "internal"}},
	{"node", "the kubelet: processes, probes, restarts, hooks, termination, status, events (`node`); on a cluster (`node/kube`); pod network namespaces (`node/netns`); it knows pods, not workloads", []string{"probe", "gate/contract", "internal"}},
	{"gate", "the sidecar: aggregated readiness of every container, ride-through proxy, drain, watched liveness probes, queue-proxy's contract", []string{"probe", "gate/contract", "internal"}},
	{"activator", "the front door: health-aware balancing, holding, timeouts; backends from informers; its server and metrics", []string{"record", "gate/contract", "internal"}},
	{"record/kubewatch", "a recording's facts from the API (client-go informers), against `podgate run` or a cluster alike", []string{"record", "gate/contract", "internal"}},
	{"local", "`podgate run`: the node, the control plane's controllers, the embedded API server and store, the front door, composed and started in order; `podgate get`'s client side", []string{"node", "activator", "admission", "admission/workload", "gate", "probe", "record", "record/kubewatch", "gate/contract", "internal"}},
	{"kube", "`podgate cluster up` and `down`: a real control plane, the node on pod network namespaces, podgate's install and manifests", []string{"node", "activator", "admission", "admission/workload", "probe", "gate/contract", "internal"}},
	{"record/timeline", "a recording laid out on one time axis and drawn: text, SVG, HTML, the live page of `podgate run --ui`", []string{"record", "internal"}},
	{"lab", "scenarios with verdicts: the seed experiments under `podgate run` or on a cluster, load, recordings and pictures", []string{"local", "kube", "node", "admission", "admission/workload", "record", "record/kubewatch", "record/timeline", "gate/contract", "internal", "test/testapp"}},
	{"test", "test support: the probe conformance table of both worlds, Knative's queue container as a fact list, secret volumes written as the kubelet writes them, the headless browser, a goroutine-safe buffer, free ports for child processes, the benchmarks", []string{"lab", "local", "kube", "node", "gate", "activator", "admission", "admission/workload", "probe", "record", "record/kubewatch", "record/timeline", "gate/contract", "internal", "test/testapp"}},
	{"hack", "developer tools: the image writer behind `hack/image.sh` (the scripts sit beside it)", []string{"internal"}},
	{"cmd", "thin mains: flags → a part's entry point (`podgate`, `podgate-gate`, `podgate-testapp`)", []string{"lab", "local", "kube", "node", "gate", "activator", "admission", "admission/workload", "probe", "record", "record/kubewatch", "record/timeline", "gate/contract", "internal", "test/testapp"}},
}

// rootFolders are the folders at the root that hold no Go package of
// their own part: documentation, examples, and CI's entry point.
var rootFolders = []string{"docs", "examples"}

const maxRootFolders = 15

// pkg is what go list tells of one package of the module.
type pkg struct {
	ImportPath string
	Name       string
	Doc        string
	Imports    []string
}

// listPackages runs go list once over the module.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Name,Doc,Imports", "./...")
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list ./...: %v\n%s", err, stderr)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		p.ImportPath = strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// partOf is the part that holds path: the one with the longest folder.
func partOf(path string) (part, bool) {
	var best part
	for _, p := range parts {
		if (path == p.folder || strings.HasPrefix(path, p.folder+"/")) && len(p.folder) > len(best.folder) {
			best = p
		}
	}
	return best, best.folder != ""
}

func TestEveryPackageImportsOnlyThePartsItsPartMayImport(t *testing.T) {
	t.Parallel()
	for _, p := range listPackages(t) {
		from, ok := partOf(p.ImportPath)
		if !ok {
			t.Errorf("%s belongs to no part: add its folder to parts (internal/lint/layout_test.go)", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			rel, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			to, _ := partOf(rel)
			if to.folder == from.folder || slices.Contains(from.mayImport, to.folder) {
				continue
			}
			t.Errorf("%s imports %s: part %s may import only %v", p.ImportPath, rel, from.folder, from.mayImport)
		}
	}
}

func TestPartsPointOneWay(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, p := range parts {
		for _, to := range p.mayImport {
			if !seen[to] {
				t.Errorf("part %s may import %s, which is not listed before it: arrows must point one way", p.folder, to)
			}
		}
		if seen[p.folder] {
			t.Errorf("part %s listed twice", p.folder)
		}
		seen[p.folder] = true
	}
}

func TestTheRootHasAFolderPerPart(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	var folders []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			folders = append(folders, e.Name())
		}
	}
	if len(folders) > maxRootFolders {
		t.Errorf("%d folders at the root, at most %d: %v", len(folders), maxRootFolders, folders)
	}
	for _, f := range folders {
		if slices.Contains(rootFolders, f) {
			continue
		}
		if !slices.ContainsFunc(parts, func(p part) bool { return strings.Split(p.folder, "/")[0] == f }) {
			t.Errorf("root folder %s is no part's: add it to parts or rootFolders", f)
		}
	}
}

func TestPackageNamesAreUniqueAndNotTheStandardLibrarys(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", "{{.Name}}", "std").Output()
	if err != nil {
		t.Fatalf("go list std: %v", err)
	}
	std := map[string]bool{}
	for _, n := range strings.Fields(string(out)) {
		std[n] = true
	}
	byName := map[string][]string{}
	for _, p := range listPackages(t) {
		if p.Name == "main" {
			continue
		}
		byName[p.Name] = append(byName[p.Name], p.ImportPath)
		if std[p.Name] {
			t.Errorf("%s is named %s, as a standard-library package is", p.ImportPath, p.Name)
		}
	}
	for name, paths := range byName {
		if len(paths) > 1 {
			t.Errorf("%d packages are named %s: %v", len(paths), name, paths)
		}
	}
}

const (
	generatedBegin = "<!-- generated by `go test ./internal/lint -run TestArchitectureDoc -update`: the parts and packages; edit parts in internal/lint/layout_test.go and the package docs -->"
	generatedEnd   = "<!-- end of generated parts and packages -->"
)

// architectureSection is docs/architecture.md's generated part: the parts
// with their rules, then every package with the first sentence of its doc.
func architectureSection(pkgs []pkg) string {
	var b strings.Builder
	b.WriteString(generatedBegin + "\n\n")
	b.WriteString("### Parts\n\n")
	b.WriteString("A part imports only the parts in its row, all of them listed above it: the arrows point one way, from `cmd` at the bottom of this table to `internal` at its top. A package belongs to the part with the longest folder that holds it. Test files are exempt, so a node test may start the local control plane to watch the node work.\n\n")
	b.WriteString("| folder | part | may import |\n|---|---|---|\n")
	for _, p := range parts {
		may := "—"
		if len(p.mayImport) > 0 {
			may = "`" + strings.Join(p.mayImport, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s/` | %s | %s |\n", p.folder, p.job, may)
	}
	b.WriteString("\n### Packages\n\n| package | part | what it is for |\n|---|---|---|\n")
	sorted := slices.Clone(pkgs)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ImportPath < sorted[j].ImportPath })
	for _, p := range sorted {
		pt, _ := partOf(p.ImportPath)
		doc := strings.ReplaceAll(strings.TrimSpace(p.Doc), "|", `\|`)
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", p.ImportPath, pt.folder, doc)
	}
	b.WriteString("\n" + generatedEnd)
	return b.String()
}

func TestArchitectureDocShowsTheParts(t *testing.T) {
	t.Parallel()
	path := filepath.Join(moduleRoot(t), "docs", "architecture.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	begin := bytes.Index(doc, []byte(generatedBegin))
	end := bytes.Index(doc, []byte(generatedEnd))
	if begin < 0 || end < begin {
		t.Fatalf("%s: no generated section (%q … %q)", path, generatedBegin, generatedEnd)
	}
	want := architectureSection(listPackages(t))
	got := string(doc[begin : end+len(generatedEnd)])
	if got == want {
		return
	}
	if *update {
		updated := string(doc[:begin]) + want + string(doc[end+len(generatedEnd):])
		if err := os.WriteFile(path, []byte(updated), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's parts and packages are out of date: go test ./internal/lint -run TestArchitectureDoc -update", path)
}

func TestEveryPackageSaysWhatItIsFor(t *testing.T) {
	t.Parallel()
	for _, p := range listPackages(t) {
		if strings.TrimSpace(p.Doc) == "" {
			t.Errorf("%s has no package doc", p.ImportPath)
		}
	}
}

// apart are rules inside a part or across allowed arrows that keep two
// sides from knowing each other: they meet only through interfaces their
// consumer defines, in the package that composes them.
var apart = map[string][]string{
	// The kubelet learns of pods through node.PodSource and reaches its pod
	// network through node.PodNetwork: it knows neither world.
	"node": {"node/kube", "node/netns", "local", "kube"},
	// The local control plane never reaches into the node it feeds.
	"local/controllers": {"node"},
	// The node on a cluster is the kubelet and the API server's client,
	// nothing of the local control plane.
	"node/kube": {"local", "kube"},
}

func TestSidesThatMeetOnlyThroughInterfacesDoNotImportEachOther(t *testing.T) {
	t.Parallel()
	imports := map[string][]string{}
	for _, p := range listPackages(t) {
		for _, imp := range p.Imports {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				imports[p.ImportPath] = append(imports[p.ImportPath], rel)
			}
		}
	}
	for from, forbidden := range apart {
		// every package from reaches, directly or not
		reached := map[string]bool{}
		queue := []string{from}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			for _, imp := range imports[p] {
				if !reached[imp] {
					reached[imp] = true
					queue = append(queue, imp)
				}
			}
		}
		for dep := range reached {
			for _, f := range forbidden {
				if dep == f || strings.HasPrefix(dep, f+"/") {
					t.Errorf("%s reaches %s", from, dep)
				}
			}
		}
	}
}

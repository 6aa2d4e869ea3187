package knativebin

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// build is one binary as the script must build it.
type build struct {
	bin string
	// pkg is the main package it is built from and mod@version the
	// module that pins it (from the binary's build info): the main
	// module, or a dependency of podgate's own main package.
	pkg, mod, version string
	// args make it print want (its version, or its usage for Knative's
	// binaries, which have no version flag) and exit 0.
	args []string
	want string
	// env is added to the environment for that.
	env []string
}

var builds = []build{
	{KubeProxy, "k8s.io/kubernetes/cmd/kube-proxy", "k8s.io/kubernetes", "v1.37.2", []string{"--version"}, "Kubernetes v1.37.2", nil},
	// CoreDNS with the cluster's plugins: podgate's own main (hack/coredns).
	{CoreDNS, "github.com/podgate/podgate/hack/coredns", "github.com/coredns/coredns", "v1.15.0", []string{"-version"}, "CoreDNS-1.15.0", nil},
	{Controller, "knative.dev/serving/cmd/controller", "knative.dev/serving", "v0.50.0", []string{"-h"}, "Usage of", nil},
	// Knative's webhook panics without $WEBHOOK_NAME, before it parses flags.
	{Webhook, "knative.dev/serving/cmd/webhook", "knative.dev/serving", "v0.50.0", []string{"-h"}, "Usage of", []string{"WEBHOOK_NAME=webhook"}},
	{Activator, "knative.dev/serving/cmd/activator", "knative.dev/serving", "v0.50.0", []string{"-h"}, "Usage of", nil},
	{Autoscaler, "knative.dev/serving/cmd/autoscaler", "knative.dev/serving", "v0.50.0", []string{"-h"}, "Usage of", nil},
	{Queue, "knative.dev/serving/cmd/queue", "knative.dev/serving", "v0.50.0", nil, "", nil},
	{Traefik, "github.com/traefik/traefik/v3/cmd/traefik", "github.com/traefik/traefik/v3", "v3.6.12", []string{"version"}, "v3.6.12", nil},
}

func TestBuildsCoverNames(t *testing.T) {
	if len(builds) != len(Names) {
		t.Fatalf("%d builds checked, %d Names", len(builds), len(Names))
	}
	for i, b := range builds {
		if b.bin != Names[i] {
			t.Errorf("builds[%d] is %s, Names[%d] is %s", i, b.bin, i, Names[i])
		}
	}
}

func TestDirHoldsEveryBinaryStaticAtThePinnedVersion(t *testing.T) {
	d, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range builds {
		t.Run(b.bin, func(t *testing.T) {
			path, err := Path(b.bin)
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Dir(path) != d {
				t.Errorf("Path(%s) = %s, not in %s", b.bin, path, d)
			}
			checkStatic(t, path)
			checkBuildInfo(t, path, b)
			if b.args == nil {
				return
			}
			cmd := exec.Command(path, b.args...)
			cmd.Env = append(os.Environ(), b.env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s %v: %v\n%s", path, b.args, err, out)
			}
			if !strings.Contains(string(out), b.want) {
				t.Errorf("%s %v says %q, want %q in it", b.bin, b.args, out, b.want)
			}
		})
	}
}

// The queue binary has no flags: without its environment it says which
// variable is missing and exits 1. That it says so shows it runs here.
func TestQueueRunsAndNamesItsMissingEnvironment(t *testing.T) {
	path, err := Path(Queue)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path)
	cmd.Env = []string{} // none of its variables
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); !ok {
		t.Fatalf("%s with no environment: %v (want a non-zero exit)\n%s", path, err, out)
	}
	if !strings.Contains(string(out), "SERVING_") && !strings.Contains(string(out), "required key") {
		t.Errorf("%s with no environment says %q; want it to name a missing variable", path, out)
	}
}

// checkStatic fails unless path is a non-empty, stripped ELF executable
// with no program interpreter and no shared libraries: what runs in an
// image without a libc.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() == 0 {
		t.Fatalf("%s is empty", path)
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: not an ELF file: %v", path, err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC {
		t.Errorf("%s: ELF type %s, want %s (a static executable)", path, f.Type, elf.ET_EXEC)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a program interpreter: dynamically linked", path)
		}
	}
	if libs, err := f.ImportedLibraries(); err == nil && len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v", path, libs)
	}
	checkStripped(t, f, path)
}

// checkBuildInfo checks what the Go toolchain recorded in the binary: its
// main package, the module version it was built from, and the flags the
// script promises.
func checkBuildInfo(t *testing.T, path string, b build) {
	t.Helper()
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: no Go build info: %v", path, err)
	}
	if bi.Path != b.pkg {
		t.Errorf("%s is built from %s, want %s", path, bi.Path, b.pkg)
	}
	// The module of the main package is recorded as the main module,
	// not the tools module the build ran in.
	pinned := &bi.Main
	if bi.Main.Path != b.mod {
		for _, d := range bi.Deps {
			if d.Path == b.mod {
				pinned = d
			}
		}
	}
	if pinned.Path != b.mod || pinned.Version != b.version || pinned.Replace != nil {
		t.Errorf("%s is built with module %s %s (replaced: %v), want %s %s", path, pinned.Path, pinned.Version, pinned.Replace != nil, b.mod, b.version)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	for k, want := range map[string]string{"CGO_ENABLED": "0", "-trimpath": "true"} {
		if settings[k] != want {
			t.Errorf("%s is built with %s=%q, want %q", path, k, settings[k], want)
		}
	}
}

// checkStripped fails unless path has neither a symbol table (-s) nor
// DWARF (-w). (With -trimpath, Go does not record -ldflags in the build
// info, so the sections tell.)
func checkStripped(t *testing.T, f *elf.File, path string) {
	t.Helper()
	for _, s := range f.Sections {
		if s.Name == ".symtab" || strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_") {
			t.Errorf("%s has section %s: not stripped (-s -w)", path, s.Name)
		}
	}
}

// runScript runs the build script from the source tree with args and
// returns its stdout and stderr.
func runScript(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	cmd := exec.Command("bash", append([]string{filepath.Join(root, Script)}, args...)...)
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

func TestASecondRunIsACacheHitInWellUnderASecond(t *testing.T) {
	d, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	stdout, stderr, err := runScript(t)
	took := time.Since(begin)
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, stderr)
	}
	if stdout != d+"\n" {
		t.Errorf("second run printed %q, want the one line %q", stdout, d)
	}
	if !strings.Contains(stderr, "cache hit") {
		t.Errorf("second run's stderr %q does not say it is a cache hit", stderr)
	}
	if took > 900*time.Millisecond {
		t.Errorf("a cache hit took %s", took)
	}
}

func TestOnePieceIsTheSameBuildAsInTheWhole(t *testing.T) {
	whole, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runScript(t, "coredns")
	if err != nil {
		t.Fatalf("hack/knative-build.sh coredns: %v\n%s", err, stderr)
	}
	one := strings.TrimSpace(stdout)
	if one == whole {
		t.Fatalf("one piece printed the directory of all of them, %s", one)
	}
	entries, err := os.ReadDir(one)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != CoreDNS {
		t.Errorf("%s holds %v, want only %s", one, entries, CoreDNS)
	}
	a, errA := os.Stat(filepath.Join(one, CoreDNS))
	b, errB := os.Stat(filepath.Join(whole, CoreDNS))
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if !os.SameFile(a, b) {
		t.Errorf("coredns alone and coredns in the whole are different files: built twice")
	}
}

func TestAnUnknownPieceIsAnError(t *testing.T) {
	stdout, stderr, err := runScript(t, "istio")
	if err == nil {
		t.Fatalf("hack/knative-build.sh istio succeeded, printing %q", stdout)
	}
	if !strings.Contains(stderr, "unknown piece istio") || !strings.Contains(stderr, "kube-proxy coredns knative traefik") {
		t.Errorf("stderr %q does not name the piece and the known ones", stderr)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing", stdout)
	}
}

func TestEnvDirIsUsedAsIs(t *testing.T) {
	t.Setenv(EnvDir, t.TempDir())
	if _, err := Ensure(nil); err == nil || !strings.Contains(err.Error(), "$"+EnvDir) || !strings.Contains(err.Error(), "knative-queue") {
		t.Errorf("an empty $%s: got %v, want an error naming it and the missing binaries", EnvDir, err)
	}
}

// CoreDNS has every plugin the cluster's Corefile uses, and no forward:
// nothing the cluster DNS does leaves this machine.
func TestCoreDNSHasThePluginsOfTheClustersCorefile(t *testing.T) {
	path, err := Path(CoreDNS)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "-plugins").Output()
	if err != nil {
		t.Fatalf("%s -plugins: %v", path, err)
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	corefile, err := os.ReadFile(filepath.Join("..", "..", "kube", "knative", "manifests", "network", "Corefile"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bind", "log", "prometheus", "loop"} // for a user's changes
	depth := 0
	for _, l := range strings.Split(string(corefile), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if depth == 1 && f[0] != "}" {
			want = append(want, f[0]) // a plugin of the server block
		}
		depth += strings.Count(l, "{") - strings.Count(l, "}")
	}
	if len(want) < 8 {
		t.Fatalf("read %d plugins from the Corefile (%v): not the Corefile expected", len(want), want)
	}
	for _, p := range want {
		if !have[p] {
			t.Errorf("coredns has no plugin %s; it has:\n%s", p, out)
		}
	}
	if have["forward"] {
		t.Errorf("coredns has the forward plugin; it has:\n%s", out)
	}
}

// Traefik's Knative provider (experimental in v3.6) is what makes it
// Knative's ingress.
func TestTraefikHasItsKnativeProvider(t *testing.T) {
	path, err := Path(Traefik)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --help: %v\n%s", path, err, out)
	}
	for _, flag := range []string{"--experimental.knative", "--providers.knative"} {
		if !strings.Contains(string(out), flag) {
			t.Errorf("%s --help has no %s", path, flag)
		}
	}
}

// A copy of the script and the tools modules with one go.mod changed
// builds that piece again and takes the others from the cache. (With the
// Go build cache warm, as after the first build, the one piece is a relink
// of seconds.)
func TestAChangedPinRebuildsOnlyItsPiece(t *testing.T) {
	whole, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Dir(filepath.Dir(whole)) // CACHE/bin/KEY
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tree := t.TempDir()
	files := []string{Script}
	for _, m := range []string{"hack/k8s/kube-proxy", "hack/coredns", "hack/knative", "hack/traefik"} {
		files = append(files, m+"/go.mod", m+"/go.sum")
	}
	files = append(files, "hack/coredns/main.go")
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "hack/coredns/go.mod" {
			data = append(data, "// a changed pin\n"...)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(tree, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tree, f), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A cache of its own that sees the other pieces' builds.
	own := t.TempDir()
	for _, p := range []string{"kube-proxy", "knative", "traefik"} {
		if err := os.Symlink(filepath.Join(cache, p), filepath.Join(own, p)); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("bash", filepath.Join(tree, Script))
	cmd.Env = append(os.Environ(), "PODGATE_KNATIVE_CACHE="+own)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the copy with a changed pin: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "building coredns") {
		t.Errorf("coredns's go.mod changed, and it was not built again:\n%s", stderr.String())
	}
	for _, p := range []string{"kube-proxy", "knative", "traefik"} {
		if strings.Contains(stderr.String(), "building "+p) {
			t.Errorf("only coredns's go.mod changed, and %s was built again:\n%s", p, stderr.String())
		}
	}
	d := strings.TrimSpace(stdout.String())
	if !strings.HasPrefix(d, own+string(filepath.Separator)) {
		t.Fatalf("the copy printed %q, not a directory in its cache %s", d, own)
	}
	for _, n := range Names {
		if fi, err := os.Stat(filepath.Join(d, n)); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("%s has no executable %s (%v)", d, n, err)
		}
	}
	out, err := exec.Command(filepath.Join(d, CoreDNS), "-version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "CoreDNS-1.15.0") {
		t.Errorf("the rebuilt coredns -version: %v, %q", err, out)
	}
}

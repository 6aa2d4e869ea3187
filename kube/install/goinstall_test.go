package install

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// testVersion is the version the test's module proxy serves podgate's
// source at.
const testVersion = "v0.0.0-goinstall.1"

// moduleProxy writes a file:// Go module proxy serving this source tree
// as podgate's module at testVersion, and returns its GOPROXY value.
func moduleProxy(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	at := filepath.Join(t.TempDir(), "proxy", modulePath, "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	z, err := os.Create(filepath.Join(at, testVersion+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	if err := modzip.CreateFromDir(z, module.Version{Path: modulePath, Version: testVersion}, root); err != nil {
		t.Fatalf("zip podgate's module: %v", err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]any{"Version": testVersion, "Time": time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)})
	for name, data := range map[string][]byte{"list": []byte(testVersion + "\n"), testVersion + ".mod": gomod, testVersion + ".info": info} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// podgate's dependencies come from the module cache, as this test's
	// own build left them; nothing is fetched from elsewhere.
	return "file://" + filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(at))))
}

// A user who installed podgate the Go way, where a C compiler makes the
// binary dynamically linked, can start a cluster: its image is podgate of
// the same module version, built static.
func TestAPodgateInstalledWithGoInstallBuildsItsImageFromItsModuleVersion(t *testing.T) {
	proxy := moduleProxy(t)
	for k, v := range map[string]string{"GOPROXY": proxy, "GOSUMDB": "off", "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"} {
		t.Setenv(k, v)
	}
	gobin := t.TempDir()
	install := exec.Command("go", "install", modulePath+"/cmd/podgate@"+testVersion)
	install.Dir = t.TempDir()
	install.Env = append(os.Environ(), "CGO_ENABLED=1", "GOBIN="+gobin)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install: %v\n%s", err, out)
	}
	installed := filepath.Join(gobin, "podgate")
	if static, err := isStatic(installed); err != nil || static {
		t.Fatalf("go install with cgo gave static %v (%v): this test wants the dynamically linked podgate users get", static, err)
	}

	t.Chdir(t.TempDir()) // no source tree here
	dir := t.TempDir()
	img, err := BuildImage(t.Context(), dir, installed)
	if err != nil {
		t.Fatal(err)
	}
	from := "module " + modulePath + "@" + testVersion
	for _, want := range []string{"a static podgate built from " + from, "the gate podgate-gate built from " + from} {
		if !strings.Contains(img.Built, want) {
			t.Errorf("Built %q does not say %q", img.Built, want)
		}
	}
	for _, b := range []struct{ name, version string }{{StaticBinary, "podgate " + testVersion}, {GateBinary, "podgate-gate "}} {
		p := filepath.Join(dir, b.name)
		if static, err := isStatic(p); err != nil || !static {
			t.Errorf("%s: static %v, %v", p, static, err)
		}
		out, err := exec.Command(p, "version").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), b.version) {
			t.Errorf("%s version: %q, %v; want %q…", p, out, err, b.version)
		}
	}
	if entries, _ := filepath.Glob(filepath.Join(dir, ".install-*")); len(entries) > 0 {
		t.Errorf("install directories left in the layout's directory: %v", entries)
	}
}

package install

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/internal/ociimage"
	"github.com/podgate/podgate/kube/deploy"
)

// dynamicBinary is a dynamically linked program of this machine.
func dynamicBinary(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/bin/true", "/usr/bin/true", "/bin/sh"} {
		if static, err := isStatic(p); err == nil && !static {
			return p
		}
	}
	t.Fatal("no dynamically linked program found to stand for a podgate built with cgo")
	return ""
}

// The image of a podgate that is its own static binary, run from the
// source tree, is pinned by cluster's TestClusterUpInstallsPodgate; these
// are the other cases.
func TestTheImageOfADynamicallyLinkedPodgate(t *testing.T) {
	dynamic := dynamicBinary(t)

	t.Run("is built from the source tree with CGO_ENABLED=0, beside the gate's image of podgate-gate", func(t *testing.T) {
		dir := t.TempDir()
		img, err := BuildImage(t.Context(), dir, dynamic)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(img.Ref, deploy.Image+"@sha256:") || !strings.Contains(img.Built, "a static podgate built from the source tree") {
			t.Errorf("image %+v", img)
		}
		if !strings.HasPrefix(img.GateRef, deploy.GateImage+"@sha256:") || !strings.Contains(img.Built, "the gate podgate-gate built from the source tree") {
			t.Errorf("gate image %+v", img)
		}
		l, err := ociimage.OpenLayout(dir)
		if err != nil {
			t.Fatal(err)
		}
		l.CacheDir = t.TempDir()
		for _, tc := range []struct{ ref, built string }{
			{img.Ref, StaticBinary},
			{img.GateRef, GateBinary},
			// By tag too: both are in the one layout the node runs
			// images from.
			{ImageTag, StaticBinary},
			{GateImageTag, GateBinary},
		} {
			built := filepath.Join(dir, tc.built)
			if static, err := isStatic(built); err != nil || !static {
				t.Errorf("%s: static %v, %v", built, static, err)
			}
			got, err := l.Resolve(tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(built)
			if err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(got.Binary); err != nil || string(b) != string(want) {
				t.Errorf("%s: the image's program %s is not the static %s built (%v)", tc.ref, got.Binary, tc.built, err)
			}
		}
		// The gate image's entrypoint is podgate-gate, at /podgate.
		gate, err := l.Resolve(img.GateRef)
		if err != nil {
			t.Fatal(err)
		}
		if gate.Program != ociimage.BinaryPath || len(gate.Entrypoint) != 1 || gate.Entrypoint[0] != gate.Binary {
			t.Errorf("gate image: program %s, entrypoint %q; want %s alone", gate.Program, gate.Entrypoint, ociimage.BinaryPath)
		}
		out, err := exec.Command(gate.Entrypoint[0], "version").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "podgate-gate ") {
			t.Errorf("the gate image's entrypoint, version: %q, %v; want podgate-gate's", out, err)
		}
	})

	t.Run("outside the source tree is an error that says what to do", func(t *testing.T) {
		t.Chdir(t.TempDir())
		_, err := BuildImage(t.Context(), t.TempDir(), dynamic)
		for _, want := range []string{dynamic + " is dynamically linked", "CGO_ENABLED=0", "--no-install"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("buildImage: %v; want an error containing %q", err, want)
			}
		}
	})
}

func TestOutsideTheSourceTreeTheGateRunsFromPodgatesImage(t *testing.T) {
	// A static Go program stands for a podgate built with CGO_ENABLED=0
	// (hack/image.sh's), run where there is no source tree to build
	// podgate-gate from.
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module example.test/static\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() { println(\"static\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	static := filepath.Join(t.TempDir(), "podgate")
	build := exec.Command("go", "build", "-o", static, ".")
	build.Dir, build.Env = src, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build a static program: %v\n%s", err, out)
	}
	t.Chdir(src) // a module, not podgate's

	dir := t.TempDir()
	img, err := BuildImage(t.Context(), dir, static)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(img.Ref, deploy.Image+"@sha256:") || img.GateRef != img.Ref {
		t.Errorf("images %q and %q; want the gate of podgate's image", img.Ref, img.GateRef)
	}
	for _, want := range []string{"podgate's own binary", "the gate from podgate's image (not run from podgate's source tree"} {
		if !strings.Contains(img.Built, want) {
			t.Errorf("Built %q does not say %q", img.Built, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, GateBinary)); !os.IsNotExist(err) {
		t.Errorf("%s in the layout's directory (%v): nothing to build it from", GateBinary, err)
	}
}

// The names the install uses are the ones the injector and the node agent
// know: deploy is a leaf and cannot import them.
func TestTheImageNamesAreTheGateEnvironmentsOnes(t *testing.T) {
	if deploy.GateImage != contract.DefaultImage || deploy.Image != contract.PodgateImage {
		t.Errorf("deploy names %s and %s; gateenv %s (the injector's default) and %s",
			deploy.GateImage, deploy.Image, contract.DefaultImage, contract.PodgateImage)
	}
}

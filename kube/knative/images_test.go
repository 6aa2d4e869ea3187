package knative

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podgate/podgate/internal/ociimage"
)

// standIn is a tiny static Linux program standing in for the stack's
// binaries: what BuildImages does with a binary does not depend on which
// it is.
func standIn(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module standin\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "standin")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the stand-in: %v\n%s", err, out)
	}
	return bin
}

// binDir is a bin directory as hack/knative-build.sh makes it, every
// binary the stand-in, but those left out.
func binDir(t *testing.T, standIn string, leaveOut ...string) string {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(standIn)
	if err != nil {
		t.Fatal(err)
	}
	for name := range imageNames {
		skip := false
		for _, l := range leaveOut {
			skip = skip || l == name
		}
		if skip {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestBuildImagesPutsEveryBinaryIntoTheNodesLayoutByDigest(t *testing.T) {
	bin := standIn(t)
	want, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("every binary an image of its own name, resolvable by its digest", func(t *testing.T) {
		layout := t.TempDir()
		im, err := BuildImages(binDir(t, bin), layout)
		if err != nil {
			t.Fatal(err)
		}
		l, err := ociimage.OpenLayout(layout)
		if err != nil {
			t.Fatal(err)
		}
		l.CacheDir = t.TempDir()
		slots := im.slots()
		if len(slots) != len(imageNames) {
			t.Fatalf("%d slots for %d binaries", len(slots), len(imageNames))
		}
		for name, slot := range slots {
			ref := *slot
			if !strings.HasPrefix(ref, imageNames[name]+"@sha256:") {
				t.Errorf("%s: image %q, want %s by digest", name, ref, imageNames[name])
				continue
			}
			got, err := l.Resolve(ref)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if b, err := os.ReadFile(got.Binary); err != nil || string(b) != string(want) {
				t.Errorf("%s: the image's program is not the binary (%v)", name, err)
			}
			// Knative's manifests run the image's entrypoint: no command.
			if len(got.Entrypoint) != 1 || got.Program != ociimage.BinaryPath {
				t.Errorf("%s: entrypoint %q, program %s", name, got.Entrypoint, got.Program)
			}
		}
	})

	t.Run("without knative-queue, the gate's queue sidecar still has what it needs", func(t *testing.T) {
		im, err := BuildImages(binDir(t, bin, BinQueue), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if im.Queue != "" || im.Controller == "" {
			t.Errorf("images %+v: want no queue, the rest", im)
		}
	})

	t.Run("a missing binary is named, with the script that builds it", func(t *testing.T) {
		_, err := BuildImages(binDir(t, bin, BinTraefik), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), BinTraefik) || !strings.Contains(err.Error(), "hack/knative-build.sh") {
			t.Errorf("BuildImages: %v, want an error naming %s and the script", err, BinTraefik)
		}
	})
}

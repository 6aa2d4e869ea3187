package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podgate/podgate/deploy"
	"github.com/podgate/podgate/ociimage"
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

// The image of a podgate that is its own static binary is pinned by
// cluster's TestClusterUpInstallsPodgate; these are the other two cases.
func TestTheImageOfADynamicallyLinkedPodgate(t *testing.T) {
	dynamic := dynamicBinary(t)

	t.Run("is built from the source tree with CGO_ENABLED=0", func(t *testing.T) {
		dir := t.TempDir()
		img, err := BuildImage(t.Context(), dir, dynamic)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(img.Ref, deploy.Image+"@sha256:") || !strings.Contains(img.Built, "a static podgate built from the source tree") {
			t.Errorf("image %+v", img)
		}
		built := filepath.Join(dir, StaticBinary)
		if static, err := isStatic(built); err != nil || !static {
			t.Errorf("%s: static %v, %v", built, static, err)
		}
		l, err := ociimage.OpenLayout(dir)
		if err != nil {
			t.Fatal(err)
		}
		l.CacheDir = t.TempDir()
		got, err := l.Resolve(img.Ref)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(built)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(got.Binary); err != nil || string(b) != string(want) {
			t.Errorf("the image's program %s is not the static podgate built (%v)", got.Binary, err)
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

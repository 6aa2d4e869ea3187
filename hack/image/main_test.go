package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podgate/podgate/internal/ociimage"
)

// runScript runs hack/image.sh with args and returns its stdout, one
// entry a line.
func runScript(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("../image.sh", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hack/image.sh %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.Split(strings.TrimSpace(stdout.String()), "\n")
}

// hack/image.sh as a caller sees it: podgate's image and the gate's in
// one layout, their references with digests on stdout, podgate's first.
func TestImageShBuildsPodgatesImageAndTheGatesIntoOneLayout(t *testing.T) {
	dir := t.TempDir()
	layout := filepath.Join(dir, "oci")
	tarball := filepath.Join(dir, "images.tar")
	lines := runScript(t, "--layout", layout, "--tarball", tarball, "--version", "v0.0.0-test")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ghcr.io/podgate/podgate:v0.0.0-test@sha256:") ||
		!strings.HasPrefix(lines[1], "ghcr.io/podgate/podgate-gate:v0.0.0-test@sha256:") {
		t.Fatalf("stdout %q; want podgate's reference, then the gate's", lines)
	}
	l, err := ociimage.OpenLayout(layout)
	if err != nil {
		t.Fatal(err)
	}
	l.CacheDir = filepath.Join(dir, "cache")
	for _, tc := range []struct{ ref, want string }{
		{lines[0], "podgate v0.0.0-test"},
		{lines[1], "podgate-gate v0.0.0-test"},
	} {
		img, err := l.Resolve(tc.ref)
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(img.Entrypoint[0], "version").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), tc.want) {
			t.Errorf("%s: entrypoint version %q, %v; want %q", tc.ref, out, err, tc.want)
		}
	}
	if st, err := os.Stat(tarball); err != nil || st.Size() == 0 {
		t.Errorf("tarball: %v", err)
	}

	t.Run("--only picks one image, its line the only one", func(t *testing.T) {
		for only, want := range map[string]string{"podgate": lines[0], "gate": lines[1]} {
			got := runScript(t, "--layout", filepath.Join(dir, "only-"+only), "--version", "v0.0.0-test", "--only", only)
			// The same binary gives the same digest.
			if len(got) != 1 || got[0] != want {
				t.Errorf("--only %s: stdout %q, want %q", only, got, want)
			}
		}
	})
}

func TestImageShRefusesAnUnknownImage(t *testing.T) {
	cmd := exec.Command("../image.sh", "--layout", t.TempDir(), "--only", "node")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "--only node: want podgate or gate") {
		t.Errorf("--only node: %v, %q; want exit 2 naming the choices", err, out)
	}
}

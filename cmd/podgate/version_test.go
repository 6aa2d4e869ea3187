package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestVersionThroughTheBinary(t *testing.T) {
	code, version, stderr := podgateExec(t, "", "version")
	if code != 0 || !strings.HasPrefix(version, "podgate ") || strings.Contains(version, "(devel)") {
		t.Fatalf("podgate version: exit %d, %q %q; want a version line without a bare (devel)", code, version, stderr)
	}
	for _, flag := range []string{"--version", "-v"} {
		code, out, stderr := podgateExec(t, "", flag)
		if code != 0 || out != version {
			t.Errorf("podgate %s: exit %d, %q %q; want %q as podgate version prints", flag, code, out, stderr, version)
		}
	}

	t.Run("a version given at link time is printed", func(t *testing.T) {
		podgateBinary(t) // built already: this build only relinks
		bin := filepath.Join(t.TempDir(), "podgate")
		build := exec.Command("go", "build", "-ldflags", "-X main.version=v9.8.7-test", "-o", bin, "github.com/podgate/podgate/cmd/podgate")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		out, err := exec.Command(bin, "--version").Output()
		if err != nil || !strings.HasPrefix(string(out), "podgate v9.8.7-test (") {
			t.Errorf("podgate --version = %q, %v; want podgate v9.8.7-test (…)", out, err)
		}
	})
}

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/podgate/podgate/internal/leftovers"
	"github.com/podgate/podgate/node/proc"
)

func TestMain(m *testing.M) {
	// Before anything else: the guardian of the Supervisors these tests
	// start is this test binary, re-executed.
	proc.RunReaperIfAsked()
	check := leftovers.Isolate()
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	check(code)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

// podgateBinary builds the podgate binary once per test run: the tests
// that need real signals, real children and a real process run it.
func podgateBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			buildErr = fmt.Errorf("the go tool is needed to build podgate: %w", err)
			return
		}
		if binDir, err = os.MkdirTemp("", "podgate-test-"); err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(binDir, "podgate")
		// Static, as hack/image.sh builds it: the tests put this binary
		// in an OCI image too, which holds no libc.
		build := exec.Command(goTool, "build", "-o", binPath, "github.com/podgate/podgate/cmd/podgate")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

package labrun

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// podgateBin is the real podgate binary the scenarios run, built once.
var podgateBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "podgate-scenario-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "scenario tests:", err)
		os.Exit(1)
	}
	podgateBin = filepath.Join(dir, "podgate")
	build := exec.Command("go", "build", "-o", podgateBin, "github.com/podgate/podgate/cmd/podgate")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "scenario tests: go build podgate: %v\n%s", err, out)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}))
}

package labrun

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"go.uber.org/goleak"
)

// podgateBin is the real podgate binary the scenarios run, built once.
var podgateBin string

// The Knative cluster's pods are reached from inside its network
// namespace (podnet's Do, on the tests' goroutines); the main goroutine
// keeps the main thread, as podnet asks of a program that uses it.
func init() { runtime.LockOSThread() }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "podgate-scenario-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "scenario tests:", err)
		os.Exit(1)
	}
	podgateBin = filepath.Join(dir, "podgate")
	// Static, as hack/image.sh builds it: the Knative cluster puts this
	// podgate into its image.
	build := exec.Command("go", "build", "-trimpath", "-o", podgateBin, "github.com/podgate/podgate/cmd/podgate")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
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

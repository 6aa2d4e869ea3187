package lab_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"go.uber.org/goleak"

	"github.com/podgate/podgate/internal/leftovers"
)

// podgateBin is the real podgate binary, built once for every scenario.
var podgateBin string

// The cluster's pods are reached from inside its network namespace
// (podnet's Do, on the tests' goroutines); the main goroutine keeps the
// main thread, as podnet asks of a program that uses it.
func init() { runtime.LockOSThread() }

func TestMain(m *testing.M) {
	check := leftovers.Isolate()
	dir, err := os.MkdirTemp("", "podgate-lab-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "lab tests:", err)
		os.Exit(1)
	}
	podgateBin = filepath.Join(dir, "podgate")
	// Static, as hack/image.sh builds it: the cluster the seeds run on
	// puts this podgate into its image (kube/cluster/install.BuildImage).
	build := exec.Command("go", "build", "-trimpath", "-o", podgateBin, "github.com/podgate/podgate/cmd/podgate")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "lab tests: go build podgate: %v\n%s", err, out)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(dir)
		check(code)
		os.Exit(code)
	}))
}

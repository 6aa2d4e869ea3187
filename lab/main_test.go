package lab_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// podgateBin is the real podgate binary, built once for every scenario.
var podgateBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "podgate-lab-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "lab tests:", err)
		os.Exit(1)
	}
	podgateBin = filepath.Join(dir, "podgate")
	out, err := exec.Command("go", "build", "-o", podgateBin, "github.com/podgate/podgate/cmd/podgate").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "lab tests: go build podgate: %v\n%s", err, out)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}))
}

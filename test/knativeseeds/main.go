// Command knativeseeds runs every seed scenario on real Knative Serving
// with both queue sidecars (podgate's gate and Knative's queue-proxy),
// both request paths (the activator always in it, or the ingress to the
// pods) and prints the comparison table in markdown for
// docs/comparison.md. It needs root (podgate cluster up) and a podgate
// source tree (run it from the repository: go run ./test/knativeseeds).
//
// Its exit status is the gate's runs' alone: Knative's queue-proxy is
// expected to fail where Knative is broken.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/podgate/podgate/lab/labrun"
	"github.com/podgate/podgate/lab/scenario"
)

// The clusters' pods are reached from inside their network namespaces;
// the main goroutine keeps the main thread, as podnet asks.
func init() { runtime.LockOSThread() }

func main() {
	recordDir := flag.String("record-dir", "knativeseeds-out", "where each run's recording, picture (and log when it failed) go")
	parallel := flag.Int("parallel", 4, "runs at once, over both clusters")
	flag.Parse()
	if err := run(*recordDir, *parallel); err != nil {
		fmt.Fprintln(os.Stderr, "knativeseeds:", err)
		os.Exit(1)
	}
}

func run(recordDir string, parallel int) error {
	files, err := filepath.Glob(filepath.Join("examples", "scenarios", "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no examples/scenarios/*.yaml here (run from the repository): %v", err)
	}
	scenarios, err := scenario.ReadAll(files)
	if err != nil {
		return err
	}
	bin, err := os.MkdirTemp("", "knativeseeds-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bin)
	podgate := filepath.Join(bin, "podgate")
	// Static: the cluster puts this podgate into its image.
	build := exec.Command("go", "build", "-trimpath", "-o", podgate, "./cmd/podgate")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build podgate: %w\n%s", err, out)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	runs, err := labrun.RunKnative(ctx, labrun.KnativeConfig{Binary: podgate, RecordDir: recordDir, Parallel: parallel, Out: os.Stderr}, scenarios)
	if err != nil {
		return err
	}
	fmt.Print(labrun.Table(runs, true))
	if !labrun.GatePassed(runs) {
		return fmt.Errorf("a run with the gate failed (reports above, files in %s)", recordDir)
	}
	return nil
}

package server

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/podgate/podgate/gate/gatemain"
	"github.com/podgate/podgate/node/proc"
	"github.com/podgate/podgate/test/testapp"
)

// The test binary doubles as the programs of the pods the node agent
// runs: the default image resolution runs os.Executable() with "testapp"
// for the test app's image, and the gate's `podgate gate` (and its
// startup probe `podgate gate wait`) as this binary with "gate", as
// podgate runs its own subcommands. Anything else that is no test flag is
// refused: a pod that runs some other podgate subcommand must not run the
// tests again.
func TestMain(m *testing.M) {
	proc.RunReaperIfAsked()
	if len(os.Args) > 1 && os.Args[1] == "testapp" {
		os.Exit(testapp.Main(os.Args[2:]))
	}
	if len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-") {
		os.Exit(runAsPodgate(os.Args[1:]))
	}
	code := m.Run()
	if err := stopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the shared cluster:", err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// runAsPodgate is `podgate gate` and `podgate gate wait` for this test
// binary.
func runAsPodgate(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	switch {
	case len(args) > 1 && args[0] == "gate" && args[1] == "wait":
		fs := flag.NewFlagSet("gate wait", flag.ContinueOnError)
		timeout := fs.Duration("timeout", 9*time.Second, "")
		if err := fs.Parse(args[2:]); err != nil {
			return 2
		}
		if _, err := gatemain.Wait(ctx, os.Getenv, *timeout); err != nil {
			fmt.Fprintln(os.Stderr, "Error:", err)
			return 1
		}
		return 0
	case len(args) == 1 && args[0] == "gate":
		if err := gatemain.Run(ctx, gatemain.Config{LookupEnv: os.LookupEnv, Logger: logger, Stdout: os.Stdout}); err != nil {
			fmt.Fprintln(os.Stderr, "Error:", err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "this test binary runs only `podgate testapp`, `podgate gate` and `podgate gate wait`, not %q\n", args)
	return 2
}

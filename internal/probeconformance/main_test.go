package probeconformance_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/podgate/podgate/testapp"
)

// The test binary doubles as the containers' program: the default image
// resolution runs os.Executable() with "testapp", as podgate runs its own
// subcommand.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "testapp" {
		os.Exit(runTestapp(os.Args[2:]))
	}
	goleak.VerifyTestMain(m)
}

// runTestapp is `podgate testapp` for this test binary.
func runTestapp(args []string) int {
	fs := flag.NewFlagSet("testapp", flag.ContinueOnError)
	var flags testapp.Flags
	flags.Bind(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := flags.Config(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := testapp.Run(ctx, cfg, slog.New(slog.NewTextHandler(os.Stderr, nil))); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
	return 0
}

// Command podgate-testapp is the test app on its own (image
// ghcr.io/podgate/testapp), for images that should not carry all of podgate.
// `podgate testapp` is the same app with the same flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/podgate/podgate/testapp"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stderr))
}

// run returns the exit code: 0 after a clean termination, 1 when the app
// fails (e.g. its port is taken), 2 for usage errors.
func run(args []string, getenv func(string) string, stderr io.Writer) int {
	fs := flag.NewFlagSet("podgate-testapp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: podgate-testapp [flags]\n\n%s\n\nFlags:\n", testapp.Usage)
		fs.PrintDefaults()
	}
	var flags testapp.Flags
	flags.Bind(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "Error: unexpected arguments %q\n", fs.Args())
		return 2
	}
	cfg, err := flags.Config(getenv)
	if err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// After the first signal, a second one kills at once (default action).
	context.AfterFunc(ctx, stop)
	if err := testapp.Run(ctx, cfg, slog.New(slog.NewTextHandler(stderr, nil))); err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return 1
	}
	return 0
}

package testapp

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

// Main is the test app as a program: args is its command line after the
// program's name (the flags of Flags.Bind and nothing else), the
// environment and stderr are the process's. It returns the exit code:
// 0 after a clean termination or --help, 2 for a usage error (a bad flag,
// a stray argument, a flag or environment variable Config refuses), 1 when
// the app fails (a taken port, an exec file it cannot create).
//
// It is cmd/podgate-testapp's main, and the test binaries that double as
// their pods' containers run it for `os.Args[1] == "testapp"`, as podgate
// runs its own subcommand.
func Main(args []string) int {
	// The name flag.CommandLine would use: the binary's, in the usage.
	name := filepath.Base(os.Args[0])
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: %s [flags]\n\n%s\n\nFlags:\n", name, Usage)
		fs.PrintDefaults()
	}
	var flags Flags
	flags.Bind(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2 // the flag package has said what is wrong
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "Error: unexpected arguments %q\n", fs.Args())
		return 2
	}
	return flags.Main(context.Background(), os.Getenv, os.Stderr)
}

// Main is Main after the command line is parsed, for a command line that
// parses it itself (`podgate testapp`'s cobra command): it resolves f
// against getenv and runs the app until ctx ends or SIGTERM or SIGINT
// comes; a second signal kills at once (the default action). Logs and
// "Error: …" go to stderr; the exit code is Main's (2 for what Config
// refuses, 1 when the app fails, 0 otherwise).
func (f *Flags) Main(ctx context.Context, getenv func(string) string, stderr io.Writer) int {
	cfg, err := f.Config(getenv)
	if err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	context.AfterFunc(ctx, stop)
	if err := Run(ctx, cfg, slog.New(slog.NewTextHandler(stderr, nil))); err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return 1
	}
	return 0
}

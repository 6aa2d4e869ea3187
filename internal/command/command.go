// Package command is what podgate's commands share about running a cobra
// command tree as a process: the exit codes (0 ok, 1 invalid input or a
// failed check, 2 usage), the error that carries a code out of a
// subcommand, and Execute, which prints the error and returns the code.
// Both binaries use it: `podgate` and the gate's own `podgate-gate`.
package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"
)

// Exit codes shared by every subcommand (docs/cli.md#exit-codes).
const (
	ExitOK      = 0
	ExitInvalid = 1 // invalid input or a failed check
	ExitUsage   = 2 // usage error: unknown flag, missing argument
)

// ExitError carries an exit code out of a subcommand. Its message, if
// any, is printed by Execute.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Usagef is a usage error (exit 2).
func Usagef(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// Invalidf is an invalid-input error (exit 1).
func Invalidf(format string, args ...any) error {
	return &ExitError{Code: ExitInvalid, Err: fmt.Errorf(format, args...)}
}

// WithCode returns an error that exits with code and prints nothing more:
// the subcommand has said what went wrong.
func WithCode(code int) error { return &ExitError{Code: code} }

// Prepare makes root quiet about errors (Execute prints them once) and
// turns flag parse errors into usage errors.
func Prepare(root *cobra.Command) {
	root.SilenceUsage = true
	root.SilenceErrors = true
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
	})
}

// Execute runs root with args and returns the process exit code, having
// printed the error, if any, to stderr.
func Execute(root *cobra.Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintln(stderr, "Error:", ee.Err)
		}
		return ee.Code
	}
	// Cobra reports unknown commands and bad positional arguments as plain
	// errors: those are usage errors.
	fmt.Fprintln(stderr, "Error:", err)
	return ExitUsage
}

// Context is the command's context; Background when it was run without
// one.
func Context(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// Logger is the logger of a --log-format flag: "text" or "json" on w.
func Logger(w io.Writer, format string) (*slog.Logger, error) {
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	}
	return nil, fmt.Errorf("invalid --log-format %q: want text or json", format)
}

// Command podgate is the one binary of podgate: the local node agent, the
// gate sidecar, the admission tools, the probe runner and the test app.
// It is thin: flags in, packages do the work.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/podgate/podgate/gateenv"
)

// Exit codes shared by every subcommand (docs/cli.md#exit-codes).
const (
	exitOK      = 0
	exitInvalid = 1 // invalid input or a failed check
	exitUsage   = 2 // usage error: unknown flag, missing argument
)

// exitError carries an exit code out of a subcommand. Its message, if any,
// has been printed already or is printed by main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageErrorf is a usage error (exit 2).
func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// invalidf is an invalid-input error (exit 1).
func invalidf(format string, args ...any) error {
	return &exitError{code: exitInvalid, err: fmt.Errorf(format, args...)}
}

// withCode returns an error that exits with code and prints nothing more.
func withCode(code int) error { return &exitError{code: code} }

// subcommands are registered by the files that define them, so each
// subcommand lives in its own file next to the package it drives.
var subcommands []func() *cobra.Command

func register(newCmd func() *cobra.Command) { subcommands = append(subcommands, newCmd) }

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "podgate",
		Short: "Make every container of a pod count before traffic reaches it",
		Long: `podgate runs pod manifests with kubelet-exact probes, gates traffic on the
readiness of every container, and rides out container restarts without errors.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildVersion(),
	}
	root.SetVersionTemplate("podgate {{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	// Flag parse errors are usage errors (exit 2), like a missing argument.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
	})
	for _, newCmd := range subcommands {
		root.AddCommand(newCmd())
	}
	root.RunE = runBare
	return root
}

// runBare is `podgate` without a subcommand: the help, or the gate in
// queue-proxy's environment. Knative starts its queue sidecar with the
// image's entrypoint and no arguments, so with podgate's image as
// Knative's queue-sidecar-image (deploy/knative) that is `podgate` alone,
// with QUEUE_SERVING_PORT and the other SERVING_* variables set.
func runBare(cmd *cobra.Command, _ []string) error {
	if _, ok := os.LookupEnv(gateenv.EnvQueueServingPort); !ok {
		return cmd.Help()
	}
	gate, _, err := cmd.Find([]string{"gate"})
	if err != nil || gate == cmd {
		return fmt.Errorf("no gate subcommand: %v", err)
	}
	return gate.RunE(gate, nil)
}

// run executes the CLI with no standard input and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	return runIO(args, strings.NewReader(""), stdout, stderr)
}

// runIO executes the CLI and returns the process exit code.
func runIO(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetIn(stdin)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "Error:", ee.err)
		}
		return ee.code
	}
	// Cobra reports unknown commands and bad positional arguments as plain
	// errors: those are usage errors.
	fmt.Fprintln(stderr, "Error:", err)
	return exitUsage
}

// init locks the main goroutine to the main thread for good, so no other
// goroutine ever runs there. The node agent starts a pod's processes from
// threads switched into the pod's network namespace; a thread whose way
// back fails stays locked to its goroutine so that Go ends it with the
// goroutine — but Go never ends the main thread: it parks it, still in
// the pod's namespace (keeping the namespace alive), and /proc/PID/ns/net,
// which shows the main thread's, would name that namespace from then on
// (podnet.ErrNetnsNotRestored).
func init() { runtime.LockOSThread() }

func main() {
	os.Exit(runIO(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Command podgate is the one binary of podgate: the local node agent, the
// gate sidecar, the admission tools, the probe runner and the test app.
// It is thin: flags in, packages do the work.
package main

import (
	"context"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/podgate/podgate/gate/gatecli"
	"github.com/podgate/podgate/internal/command"
	"github.com/podgate/podgate/node/proc"
)

// Exit codes shared by every subcommand (docs/cli.md#exit-codes).
const (
	exitOK      = command.ExitOK
	exitInvalid = command.ExitInvalid
	exitUsage   = command.ExitUsage
)

func usageErrorf(format string, args ...any) error { return command.Usagef(format, args...) }

func invalidf(format string, args ...any) error { return command.Invalidf(format, args...) }

func withCode(code int) error { return command.WithCode(code) }

// contextOf is the command's context; Background when it was run without
// one.
func contextOf(cmd *cobra.Command) context.Context { return command.Context(cmd) }

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
		Version: buildVersion(),
	}
	root.SetVersionTemplate("podgate {{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	command.Prepare(root)
	for _, newCmd := range subcommands {
		root.AddCommand(newCmd())
	}
	root.RunE = gatecli.RunBare
	return root
}

// run executes the CLI with no standard input and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	return runIO(args, strings.NewReader(""), stdout, stderr)
}

// runIO executes the CLI and returns the process exit code.
func runIO(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return command.Execute(newRootCmd(stdout, stderr), args, stdin, stdout, stderr)
}

// init locks the main goroutine to the main thread for good, so no other
// goroutine ever runs there. The node agent starts a pod's processes from
// threads switched into the pod's network namespace; a thread whose way
// back fails stays locked to its goroutine so that Go ends it with the
// goroutine — but Go never ends the main thread: it parks it, still in
// the pod's namespace (keeping the namespace alive), and /proc/PID/ns/net,
// which shows the main thread's, would name that namespace from then on
// (netns.ErrNetnsNotRestored).
func init() { runtime.LockOSThread() }

func main() {
	// Before anything else: the node agent's guardian process is this
	// binary, re-executed.
	proc.RunReaperIfAsked()
	os.Exit(runIO(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/podgate/podgate/test/testapp"
)

func init() { register(newTestappCmd) }

func newTestappCmd() *cobra.Command {
	var flags testapp.Flags
	cmd := &cobra.Command{
		Use:   "testapp",
		Short: "Run the toggle test app (image ghcr.io/podgate/testapp)",
		Long: `Run the test app: an HTTP server whose readiness, liveness and exec-probe
file can be flipped at run time, for examples and scenarios.

` + testapp.Usage,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// testapp's exit codes are podgate's (2 usage, 1 invalid input
			// or a failed run), and it has printed what went wrong.
			if code := flags.Main(contextOf(cmd), os.Getenv, cmd.ErrOrStderr()); code != exitOK {
				return withCode(code)
			}
			return nil
		},
	}
	flags.Bind(cmd.Flags())
	return cmd
}

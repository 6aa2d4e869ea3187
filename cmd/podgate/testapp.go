package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/podgate/podgate/testapp"
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
			cfg, err := flags.Config(os.Getenv)
			if err != nil {
				return usageErrorf("%v", err)
			}
			parent := cmd.Context()
			if parent == nil {
				parent = context.Background()
			}
			ctx, stop := signal.NotifyContext(parent, syscall.SIGTERM, os.Interrupt)
			defer stop()
			// After the first signal, a second one kills at once (default action).
			context.AfterFunc(ctx, stop)
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			if err := testapp.Run(ctx, cfg, logger); err != nil {
				return invalidf("%w", err)
			}
			return nil
		},
	}
	flags.Bind(cmd.Flags())
	return cmd
}

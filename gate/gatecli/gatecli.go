// Package gatecli is the gate's command line, `gate` and `gate wait`,
// shared by the two binaries that carry it: `podgate`, and `podgate-gate`,
// the gate alone (what runs in every pod: it links none of the node, the
// webhook or the control plane).
package gatecli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/gate/gatemain"
	"github.com/podgate/podgate/internal/command"
)

// Command is `gate`, with `gate wait` under it.
func Command() *cobra.Command {
	var (
		requestLog bool
		logFormat  string
	)
	cmd := &cobra.Command{
		Use:   "gate",
		Short: "Run the gate sidecar (a drop-in for Knative's queue-proxy)",
		Long: `Run the gate: the sidecar that answers for the readiness of every container
of its pod, proxies traffic to the serving container while riding out its
restarts, and drains before the pod stops.

It is configured by environment, as Knative's queue-proxy is
(SERVING_READINESS_PROBE, QUEUE_SERVING_PORT, USER_PORT, CONTAINER_CONCURRENCY,
REVISION_TIMEOUT_SECONDS, SERVING_*), plus PODGATE_* variables for what
queue-proxy lacks. See docs/gate.md. As queue-proxy, it requires QUEUE_SERVING_PORT,
USER_PORT, CONTAINER_CONCURRENCY, REVISION_TIMEOUT_SECONDS, SERVING_NAMESPACE,
SERVING_CONFIGURATION, SERVING_REVISION, SERVING_POD and SERVING_POD_IP to be
set; a missing or malformed variable exits 1 naming it.

It listens on $SERVING_POD_IP (else $POD_IP) when that is a loopback
address (local mode: every pod has its own), else on every interface. SIGTERM starts the drain; the gate exits once drained.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// A usage error is one whatever the environment holds.
			logger, err := command.Logger(cmd.ErrOrStderr(), logFormat)
			if err != nil {
				return command.Usagef("%v", err)
			}
			c := gatemain.Config{LookupEnv: os.LookupEnv, Logger: logger, Stdout: cmd.OutOrStdout()}
			if cmd.Flags().Changed("request-log") {
				c.RequestLog = &requestLog
			}
			ctx, stop := signal.NotifyContext(command.Context(cmd), syscall.SIGTERM, os.Interrupt)
			defer stop()
			// During the drain a second signal kills at once (default action).
			context.AfterFunc(ctx, stop)
			if err := gatemain.Run(ctx, c); err != nil {
				return command.Invalidf("%v", err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&requestLog, "request-log", false, "write one JSON line per request to stdout (default: $"+gatemain.EnvEnableRequestLog+")")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format on stderr: text or json")
	cmd.AddCommand(waitCommand())
	return cmd
}

// waitCommand is the gate's startup probe when it runs as a native
// sidecar (gatemain.Wait says why it waits).
func waitCommand() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait",
		Short: "Wait until the gate of this container serves (its startup probe)",
		Long: `Wait until the gate configured by this environment answers on its admin
port (` + contract.LivezPath + `), at most --timeout. The injector makes it the startup
probe of the gate when the gate runs as a native sidecar: the other containers
start once the gate serves, not once the pod is ready.

Exit status: 0 the gate serves, 1 it did not within --timeout (or the
environment is malformed), 2 usage error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 {
				return command.Usagef("--timeout %s: must be positive", timeout)
			}
			url, err := gatemain.Wait(command.Context(cmd), os.Getenv, timeout)
			if err != nil {
				return command.Invalidf("%v", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "the gate serves on %s\n", url)
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 9*time.Second, "give up after this long (keep it below the probe's timeoutSeconds)")
	return cmd
}

// RunBare is a root command without a subcommand: the gate, when run in
// queue-proxy's environment, else the help. Knative starts its queue
// sidecar with the image's entrypoint and no arguments, so with podgate's
// image as Knative's queue-sidecar-image (kube/deploy/knative) that is the
// binary alone, with QUEUE_SERVING_PORT and the other SERVING_* variables
// set. root must have the gate's Command among its subcommands.
func RunBare(root *cobra.Command, _ []string) error {
	if _, ok := os.LookupEnv(contract.EnvQueueServingPort); !ok {
		return root.Help()
	}
	gate, _, err := root.Find([]string{"gate"})
	if err != nil || gate == root {
		return fmt.Errorf("no gate subcommand: %v", err)
	}
	return gate.RunE(gate, nil)
}

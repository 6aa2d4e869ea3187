package kubecmds

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/podgate/podgate/internal/command"
	"github.com/podgate/podgate/internal/kubeconfig"
)

// onCluster runs a component of a cluster (podgate webhook, podgate
// activator): the logger of --log-format, check's usage errors, the
// cluster found from --kubeconfig (then $KUBECONFIG, the in-cluster
// service account, ~/.kube/config), and run until SIGTERM or SIGINT.
func onCluster(cmd *cobra.Command, kubeconf, logFormat string, check func() error, run func(context.Context, *rest.Config, *slog.Logger) error) error {
	logger, err := command.Logger(cmd.ErrOrStderr(), logFormat)
	if err != nil {
		return command.Usagef("%v", err)
	}
	if err := check(); err != nil {
		return err
	}
	rc, source, err := kubeconfig.Load(kubeconf)
	if err != nil {
		return command.Invalidf("%v", err)
	}
	logger.Info("cluster", "api", rc.Host, "from", string(source))
	ctx, stop := signal.NotifyContext(command.Context(cmd), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, rc, logger); err != nil {
		return command.Invalidf("%v", err)
	}
	return nil
}

package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

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
		return usageErrorf("%v", err)
	}
	if err := check(); err != nil {
		return err
	}
	rc, source, err := kubeconfig.Load(kubeconf)
	if err != nil {
		return invalidf("%v", err)
	}
	logger.Info("cluster", "api", rc.Host, "from", string(source))
	ctx, stop := signal.NotifyContext(contextOf(cmd), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, rc, logger); err != nil {
		return invalidf("%v", err)
	}
	return nil
}

// textFlag and durationFlag are flag values checkSet looks at.
type (
	textFlag struct {
		flag, value string
	}
	durationFlag struct {
		flag  string
		value time.Duration
	}
)

// checkSet refuses, as usage errors, an empty text and a duration that is
// not positive: to a package's Config the zero value means its default,
// but written on the command line it is a mistake.
func checkSet(texts []textFlag, durations []durationFlag) error {
	for _, f := range texts {
		if f.value == "" {
			return usageErrorf("%s must not be empty", f.flag)
		}
	}
	for _, d := range durations {
		if d.value <= 0 {
			return usageErrorf("%s %s: must be positive", d.flag, d.value)
		}
	}
	return nil
}

package main

import (
	"github.com/spf13/cobra"

	"github.com/podgate/podgate/cmd/podgate/internal/kubecmds"
)

func init() {
	for _, newCmd := range []func() *cobra.Command{
		kubecmds.NewNodeCmd, kubecmds.NewClusterCmd, kubecmds.NewWebhookCmd, kubecmds.NewActivatorCmd, kubecmds.NewRecordCmd, kubecmds.NewNodeStatusCmd,
	} {
		register(func() *cobra.Command {
			kubecmds.Version = buildVersion()
			return newCmd()
		})
	}
}

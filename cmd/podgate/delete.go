package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/podgate/podgate/local/apiserver"
	"github.com/podgate/podgate/local/podctl"
)

func init() { register(newDeleteCmd) }

func newDeleteCmd() *cobra.Command {
	var (
		addr      string
		namespace string
		grace     int64
		now       bool
		force     bool
	)
	cmd := &cobra.Command{
		Use:   "delete pod NAME... | delete pod/NAME...",
		Short: "Terminate pods of a running 'podgate run' gracefully",
		Long: `Delete pods the way kubectl does: the pod turns Terminating at once (its
endpoint stops being ready, preStop hooks run, then SIGTERM, then SIGKILL at
the grace period) and the command returns as soon as termination has
started. A pod of a Deployment or Knative Service is replaced.

--grace-period replaces the pod's terminationGracePeriodSeconds; as with
kubectl, 0 is taken as 1 unless --force is given, and --force alone kills at
once.

Exit status: 0 ok, 1 a pod was not found or podgate is not reachable, 2 usage
error.`,
		Example: `  podgate delete pod hello-00001-deployment-7d9c4kq-x2x4q
  podgate delete pod/hello-00001-deployment-7d9c4kq-x2x4q --grace-period 5
  podgate delete pod web-0 web-1 --now`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r := podctl.DeleteRequest{Args: args, Namespace: namespace, GracePeriod: grace,
				GracePeriodSet: cmd.Flags().Changed("grace-period"), Now: now, Force: force}
			return onAPI(cmd, addr, r.Check, func(ctx context.Context, c *podctl.Client) error {
				return podctl.Delete(ctx, c, r, cmd.OutOrStdout(), cmd.ErrOrStderr())
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "api", apiserver.DefaultAddr, "address of the control API of 'podgate run'")
	f.StringVarP(&namespace, "namespace", "n", "default", "namespace of the pods")
	f.Int64Var(&grace, "grace-period", -1, "seconds the pod gets to stop; -1 keeps the pod's terminationGracePeriodSeconds")
	f.BoolVar(&now, "now", false, "stop at once (same as --grace-period=1)")
	f.BoolVar(&force, "force", false, "kill at once without a grace period")
	return cmd
}

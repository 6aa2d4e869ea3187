package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/podgate/podgate/local/apiserver"
	"github.com/podgate/podgate/local/podctl"
)

func init() { register(newLogsCmd) }

func newLogsCmd() *cobra.Command {
	var (
		addr       string
		namespace  string
		container  string
		follow     bool
		previous   bool
		tail       int64
		timestamps bool
	)
	cmd := &cobra.Command{
		Use:   "logs POD [-c CONTAINER] [-f]",
		Short: "Print the output of a container of a running 'podgate run'",
		Long: `Print what a container wrote to stdout and stderr, as kubectl logs does.
-c picks the container (default: the pod's kubectl.kubernetes.io/default-container
annotation, which the gate injection sets to the serving container; the gate
itself is "podgate"); -f keeps printing until the container stops or Ctrl-C;
-p prints the previous (restarted) instance.

Exit status: 0 ok, 1 no such pod or container, or podgate not reachable,
2 usage error.`,
		Example: `  podgate logs hello-00001-deployment-7d9c4kq-x2x4q -c user-container
  podgate logs hello-00001-deployment-7d9c4kq-x2x4q -c podgate -f    # the gate
  podgate logs pod/web-0 -p --tail 20`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r := podctl.LogsRequest{Args: args, Namespace: namespace, Container: container,
				Follow: follow, Previous: previous, Tail: tail, Timestamps: timestamps}
			return onAPI(cmd, addr, r.Check, func(ctx context.Context, c *podctl.Client) error {
				return podctl.Logs(ctx, c, r, cmd.OutOrStdout())
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "api", apiserver.DefaultAddr, "address of the control API of 'podgate run'")
	f.StringVarP(&namespace, "namespace", "n", "default", "namespace of the pod")
	f.StringVarP(&container, "container", "c", "", "container to print; needed when the pod has several")
	f.BoolVarP(&follow, "follow", "f", false, "keep printing new output")
	f.BoolVarP(&previous, "previous", "p", false, "print the previous instance of a restarted container")
	f.Int64Var(&tail, "tail", -1, "print only the last N lines; -1 prints all")
	f.BoolVar(&timestamps, "timestamps", false, "prefix each line with its time")
	return cmd
}

package kubecmds

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/podgate/podgate/cmd/podgate/internal/cmdflags"
	"github.com/podgate/podgate/internal/command"
	"github.com/podgate/podgate/internal/kubeconfig"
	"github.com/podgate/podgate/record/kubewatch"
)

// NewRecordCmd is `podgate record`.
func NewRecordCmd() *cobra.Command {
	var (
		r         = cmdflags.RecordFlags{FileFlag: "-o"}
		kubeconf  string
		namespace string
		all       bool
	)
	cmd := &cobra.Command{
		Use:   "record --kubeconfig K [-n NS | -A] -o FILE",
		Short: "Record what a cluster says of its pods, events and EndpointSlices, until Ctrl-C",
		Long: `Record, until Ctrl-C (or SIGTERM), what the cluster's API server says of the
pods of a namespace (-n, default: the kubeconfig's namespace, else default)
or of every namespace (-A): each container's state, the pods' conditions and
the gate's verdict (podgate.dev/containers-ready), the events about them, the
EndpointSlice endpoints. The kubelet's Unhealthy and ProbeWarning events are
also recorded as probe facts: on a cluster they are the only probe results.

The recording is podgate's recording format (docs/timeline.md): JSON lines,
a header then one fact per line, flushed every 200 ms and on exit. The
identity of the kubeconfig needs list and watch on pods, events and
endpointslices.

Exit status: 0 stopped by Ctrl-C or SIGTERM, 1 the cluster could not be
reached or the file written, 2 usage error.`,
		Example: `  podgate record --kubeconfig ~/.kube/config -n shop -o shop.jsonl
  podgate record -A -o cluster.jsonl --record-limit 64Mi`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if r.File == "" {
				return command.Usagef("-o FILE is required: where the recording goes")
			}
			if all && cmd.Flags().Changed("namespace") {
				return command.Usagef("-n and -A exclude each other: one namespace, or all")
			}
			if err := r.Check(false); err != nil {
				return err
			}
			return recordCluster(command.Context(cmd), r, kubeconf, namespace, all, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconf, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then the in-cluster service account, then ~/.kube/config)")
	f.StringVarP(&namespace, "namespace", "n", "", "the namespace to record (default: the kubeconfig's, else default)")
	f.BoolVarP(&all, "all-namespaces", "A", false, "record every namespace")
	f.StringVarP(&r.File, "output", "o", "", "the recording's file (created, or truncated)")
	r.BindLimit(f)
	return cmd
}

// recordCluster is `podgate record` once its flags are checked.
func recordCluster(parent context.Context, r cmdflags.RecordFlags, kubeconf, namespace string, all bool, stderr io.Writer) error {
	rc, _, err := kubeconfig.Load(kubeconf)
	if err != nil {
		return command.Invalidf("%v", err)
	}
	switch {
	case all:
		namespace = ""
	case namespace == "":
		namespace = kubeconfig.Namespace(kubeconf)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return command.Invalidf("API client for %s: %v", rc.Host, err)
	}
	rec, err := r.Open("cluster", stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(parent, syscall.SIGTERM, os.Interrupt)
	defer stop()
	runErr := kubewatch.RecordUntilDone(ctx, kubewatch.Config{Client: client, Namespace: namespace, Sink: rec, ProbesFromEvents: true}, stderr)
	if err := rec.Close(); err != nil {
		runErr = errors.Join(runErr, err)
	}
	if runErr != nil {
		return command.Invalidf("%v", runErr)
	}
	return nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"github.com/podgate/podgate/internal/kubeconfig"
	"github.com/podgate/podgate/recording"
	"github.com/podgate/podgate/recording/kubewatch"
)

func init() { register(newRecordCmd) }

// defaultRecordLimit bounds a recording unless --record-limit says
// otherwise: hours of a busy run, far less than a disk.
const defaultRecordLimit = "256Mi"

// recordFlags are --record-limit and the file flag of `podgate run
// --record` and `podgate record -o`.
type recordFlags struct {
	file  string
	limit string
	// fileFlag names the file flag in messages.
	fileFlag string
}

func (r *recordFlags) bindLimit(f *pflag.FlagSet) {
	f.StringVar(&r.limit, "record-limit", defaultRecordLimit,
		"size bound of the recording in bytes (suffixes Ki, Mi, Gi, k, M, G; at least 4Ki; 0 for none); when it is hit the recording ends with a truncated line")
}

// limitBytes is --record-limit in bytes, or a usage error.
func (r *recordFlags) limitBytes() (int64, error) {
	n, err := recording.ParseLimit(r.limit)
	if err != nil {
		return 0, usageErrorf("--record-limit %v", err)
	}
	return n, nil
}

// check refuses, as usage errors, a bound that is malformed or given
// without a file.
func (r *recordFlags) check(limitSet bool) error {
	if limitSet && r.file == "" {
		return usageErrorf("--record-limit needs %s FILE", r.fileFlag)
	}
	_, err := r.limitBytes()
	return err
}

// open creates the file and starts the recording with its header. A file
// that cannot be created, or a bound too small for the header, is
// invalid input. When the bound is hit podgate says so on stderr, once.
func (r *recordFlags) open(source string, stderr io.Writer) (*recording.File, error) {
	limit, err := r.limitBytes()
	if err != nil {
		return nil, err
	}
	f, err := recording.Create(r.file, recording.Header{Source: source, Detail: commandLine()}, limit)
	if err != nil {
		return nil, invalidf("%s: %v", r.fileFlag, err)
	}
	f.OnTruncate(func() {
		fmt.Fprintf(stderr, "podgate: the recording %s reached --record-limit %s (%d bytes): later facts were dropped; raise --record-limit (0 for no bound)\n", r.file, r.limit, limit)
	})
	return f, nil
}

// commandLine is how podgate was started, for the header's Detail.
func commandLine() string {
	args := make([]string, len(os.Args))
	for i, a := range os.Args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$") {
			a = strconv.Quote(a)
		}
		args[i] = a
	}
	return strings.Join(args, " ")
}

func newRecordCmd() *cobra.Command {
	var (
		r         = recordFlags{fileFlag: "-o"}
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
			if r.file == "" {
				return usageErrorf("-o FILE is required: where the recording goes")
			}
			if all && cmd.Flags().Changed("namespace") {
				return usageErrorf("-n and -A exclude each other: one namespace, or all")
			}
			if err := r.check(false); err != nil {
				return err
			}
			return recordCluster(contextOf(cmd), r, kubeconf, namespace, all, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconf, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then the in-cluster service account, then ~/.kube/config)")
	f.StringVarP(&namespace, "namespace", "n", "", "the namespace to record (default: the kubeconfig's, else default)")
	f.BoolVarP(&all, "all-namespaces", "A", false, "record every namespace")
	f.StringVarP(&r.file, "output", "o", "", "the recording's file (created, or truncated)")
	r.bindLimit(f)
	return cmd
}

// recordCluster is `podgate record` once its flags are checked.
func recordCluster(parent context.Context, r recordFlags, kubeconf, namespace string, all bool, stderr io.Writer) error {
	rc, _, err := kubeconfig.Load(kubeconf)
	if err != nil {
		return invalidf("%v", err)
	}
	switch {
	case all:
		namespace = ""
	case namespace == "":
		namespace = kubeconfig.Namespace(kubeconf)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return invalidf("API client for %s: %v", rc.Host, err)
	}
	rec, err := r.open("cluster", stderr)
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
		return invalidf("%v", runErr)
	}
	return nil
}

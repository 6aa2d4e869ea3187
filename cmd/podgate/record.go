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
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podgate/podgate/internal/kubeconfig"
	"github.com/podgate/podgate/recording"
	"github.com/podgate/podgate/recording/kubewatch"
)

func init() { register(newRecordCmd) }

// defaultRecordLimit bounds a recording unless --record-limit says
// otherwise: hours of a busy run, far less than a disk.
const defaultRecordLimit = "256Mi"

// minRecordLimit is the smallest bound: room for the header, a few facts
// and the truncated line.
const minRecordLimit = 4 << 10

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
	q, err := resource.ParseQuantity(r.limit)
	if err != nil {
		return 0, usageErrorf("--record-limit %q: want a size in bytes such as 256Mi or 1000000: %v", r.limit, err)
	}
	n, ok := q.AsInt64()
	switch {
	case !ok || n < 0:
		return 0, usageErrorf("--record-limit %q: want a whole number of bytes, 0 or more", r.limit)
	case n > 0 && n < minRecordLimit:
		return 0, usageErrorf("--record-limit %q: at least %d bytes (4Ki), or 0 for no bound", r.limit, minRecordLimit)
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

// openedRecording is a recording being written to its file.
type openedRecording struct {
	*recording.Writer
	file *os.File
}

// open creates the file and starts the recording with its header. A file
// that cannot be created, or a bound too small for the header, is
// invalid input. When the bound is hit podgate says so on stderr, once.
func (r *recordFlags) open(source string, stderr io.Writer) (*openedRecording, error) {
	limit, err := r.limitBytes()
	if err != nil {
		return nil, err
	}
	f, err := os.Create(r.file)
	if err != nil {
		return nil, invalidf("%s: %v", r.fileFlag, err)
	}
	w, err := recording.NewWriter(f, recording.Header{Source: source, Detail: commandLine()}, limit)
	if err != nil {
		_ = f.Close()
		_ = os.Remove(r.file)
		return nil, invalidf("--record-limit: %v", err)
	}
	w.OnTruncate(func() {
		fmt.Fprintf(stderr, "podgate: the recording %s reached --record-limit %s (%d bytes): later facts were dropped; raise --record-limit (0 for no bound)\n", r.file, r.limit, limit)
	})
	return &openedRecording{Writer: w, file: f}, nil
}

// Close flushes the recording and closes its file.
func (o *openedRecording) Close() error {
	return errors.Join(o.Writer.Close(), o.file.Close())
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
		namespace = kubeconfigNamespace(kubeconf)
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
	runErr := watchUntilDone(ctx, client, namespace, rec, stderr)
	if err := rec.Close(); err != nil {
		runErr = errors.Join(runErr, err)
	}
	if runErr != nil {
		return invalidf("%v", runErr)
	}
	return nil
}

// watchUntilDone records until ctx ends, then takes the watch's last look.
func watchUntilDone(ctx context.Context, client kubernetes.Interface, namespace string, sink recording.Sink, stderr io.Writer) error {
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	w, err := kubewatch.Start(syncCtx, kubewatch.Config{Client: client, Namespace: namespace, Sink: sink, ProbesFromEvents: true})
	cancel()
	switch {
	case err != nil && ctx.Err() != nil:
		return nil // Ctrl-C before the first lists: a recording of nothing
	case err != nil:
		return err
	}
	where := "namespace " + namespace
	if namespace == "" {
		where = "every namespace"
	}
	fmt.Fprintf(stderr, "podgate: recording %s until Ctrl-C\n", where)
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return w.Stop(stopCtx)
}

// kubeconfigNamespace is the namespace of the kubeconfig's current
// context, as kubectl takes it, else default.
func kubeconfigNamespace(path string) string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).Namespace()
	if err != nil || ns == "" {
		return "default"
	}
	return ns
}

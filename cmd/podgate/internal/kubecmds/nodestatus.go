package kubecmds

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/internal/command"
	"github.com/podgate/podgate/node/gatestatus"
)

// The environment the node status service's DaemonSet sets from the
// downward API (spec.nodeName, status.hostIP): the defaults of --node
// and --listen.
const (
	envNodeName = "NODE_NAME"
	envHostIP   = "HOST_IP"
)

// NewNodeStatusCmd is `podgate node-status`.
func NewNodeStatusCmd() *cobra.Command {
	var (
		node, listen, kubeconf, logFormat string
		grace                             time.Duration
	)
	cmd := &cobra.Command{
		Use:   "node-status",
		Short: "Run the node status service: the gates of this node read their own pod and write their condition through it",
		Long: `Run podgate's node status service, one per node (a DaemonSet with
hostNetwork). Every gate on the node reaches it at
http://$(PODGATE_HOST_IP):9026 (PODGATE_STATUS_SOURCE) to read and watch its
own pod and to write its own pod's condition podgate.dev/containers-ready,
so no pod needs an API permission of its own and the API server holds one
watch per node instead of one per pod.

A caller is known by the source address of its connection: the pod IP of a
running pod of --node that is not hostNetwork. It may list and watch that pod
only, and patch that pod's status only to set the gate's condition;
everything else is refused 403 and told on the pod as Event
GateRequestRefused. A write the API server refuses leaves
GateConditionNotWritten; an injected pod whose gate has run for --gate-grace
without connecting gets GateNotConnected.

/metrics (Prometheus), /healthz and /readyz (ready once the node's pods are
listed) are served on the same address.

--node defaults to $NODE_NAME, --listen to $HOST_IP:9026. The cluster is
found from --kubeconfig, else $KUBECONFIG, else the pod's service account,
else ~/.kube/config; the identity needs get, list and watch on pods, patch
on pods/status and create on events. See docs/gate.md.

Exit status: 0 stopped by SIGTERM or SIGINT, 1 could not start or serve
(the cluster not found, the address taken), 2 usage error (a flag missing or
wrong as written).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return onCluster(cmd, kubeconf, logFormat, func() error { return checkNodeStatusFlags(node, listen, grace) },
				func(ctx context.Context, rc *rest.Config, logger *slog.Logger) error {
					return runNodeStatus(ctx, rc, logger, gatestatus.Options{Node: node, GateGrace: grace}, listen)
				})
		},
	}
	defListen := ""
	if ip := os.Getenv(envHostIP); ip != "" {
		defListen = net.JoinHostPort(ip, strconv.Itoa(contract.NodeStatusPort))
	}
	f := cmd.Flags()
	f.StringVar(&node, "node", os.Getenv(envNodeName), "the node whose pods are served (default $"+envNodeName+")")
	f.StringVar(&listen, "listen", defListen, fmt.Sprintf("address to serve the gates, /metrics, /healthz and /readyz on (default $%s:%d)", envHostIP, contract.NodeStatusPort))
	f.StringVar(&kubeconf, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then the in-cluster service account, then ~/.kube/config)")
	f.DurationVar(&grace, "gate-grace", gatestatus.DefaultGateGrace, "an injected pod's gate container running this long without connecting gets the Event GateNotConnected")
	f.StringVar(&logFormat, "log-format", "text", "log format on stderr: text or json")
	return cmd
}

// checkNodeStatusFlags reports, as usage errors naming the flag, a
// missing --node or --listen and values wrong as written (docs/cli.md's
// rule); an address the system refuses is invalid input later (exit 1).
func checkNodeStatusFlags(node, listen string, grace time.Duration) error {
	switch {
	case node == "":
		return command.Usagef("--node is required (or $%s)", envNodeName)
	case listen == "":
		return command.Usagef("--listen is required (or $%s, to listen on $%s:%d)", envHostIP, envHostIP, contract.NodeStatusPort)
	case grace <= 0:
		return command.Usagef("--gate-grace %s: must be positive", grace)
	}
	if _, port, err := net.SplitHostPort(listen); err != nil {
		return command.Usagef("--listen %q: %v", listen, err)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return command.Usagef("--listen %q: port %q is not a number from 0 to 65535", listen, port)
	}
	return nil
}

func runNodeStatus(ctx context.Context, rc *rest.Config, logger *slog.Logger, opts gatestatus.Options, listen string) error {
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = gatestatus.ClientQPS, gatestatus.ClientBurst
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("API client: %w", err)
	}
	opts.Client, opts.Logger = client, logger
	svc, err := gatestatus.New(opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", listen, err)
	}
	logger.Info("node status service listening", "addr", ln.Addr().String(), "node", opts.Node)
	return svc.Run(ctx, ln)
}

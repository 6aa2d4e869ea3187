package kubecmds

import (
	"context"
	"log/slog"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/activator/server"
	"github.com/podgate/podgate/cmd/podgate/internal/cmdflags"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/internal/command"
)

// NewActivatorCmd is `podgate activator`.
func NewActivatorCmd() *cobra.Command {
	var (
		cfg       server.Config
		kubeconf  string
		logFormat string
	)
	cmd := &cobra.Command{
		Use:   "activator",
		Short: "Run the activator on a cluster: route Host NAME.NAMESPACE.DOMAIN to Service NAME's ready pods, holding requests while none is",
		Long: `Run podgate's activator on Kubernetes (deploy/base/activator).

A request for Host NAME.NAMESPACE.DOMAIN goes to a pod of Service NAME in
namespace NAMESPACE - a pod its EndpointSlices list - that is ready in both
views: its endpoint's ready condition, and the answer of its gate to the
activator's own health check (every 200 ms). While no pod is, the request is
held, and gets 504 after --request-timeout. A pod without a gate (not
injected) is sent requests on the Service's own target port once its endpoint
is ready; a Service that cannot be routed (no gate and no port to serve HTTP
on: no TCP port, or several and none named http) gets 503 with the reason at
once and a Warning Event NoRoute. A host that names no Service with
EndpointSlices gets 404 at once. A Service's health checks start with its
first request and stop after --idle-timeout without one.

/metrics (Prometheus), /healthz and /readyz (ready once every EndpointSlice
and Pod is listed) are served on --metrics-listen. SIGTERM stops taking
connections and gives requests in flight and held --shutdown-timeout.

The cluster is found from --kubeconfig, else $KUBECONFIG, else the pod's
service account, else ~/.kube/config. Its identity needs list and watch on
endpointslices and pods, and create and patch on events. See docs/kubernetes.md.

Exit status: 0 stopped by SIGTERM or SIGINT, 1 could not start or serve,
2 usage error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return onCluster(cmd, kubeconf, logFormat, func() error { return checkActivatorFlags(cfg) },
				func(ctx context.Context, rc *rest.Config, logger *slog.Logger) error {
					cfg.Rest, cfg.Logger = rc, logger
					// On a cluster: a Service it cannot route gets an Event.
					cfg.ServiceEvents = true
					return server.Run(ctx, cfg)
				})
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconf, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then the in-cluster service account, then ~/.kube/config)")
	f.StringVar(&cfg.Listen, "listen", server.DefaultListen, "address to serve traffic on")
	f.StringVar(&cfg.MetricsListen, "metrics-listen", server.DefaultMetricsListen, "address to serve /metrics, /healthz and /readyz on")
	f.StringVar(&cfg.Domain, "domain", activator.DefaultDomain, "domain of the hosts: NAME.NAMESPACE.DOMAIN")
	f.StringVar(&cfg.Namespace, "namespace", "", "serve the Services of this namespace only (default: every namespace)")
	f.Int32Var(&cfg.GatePort, "gate-port", contract.GatePort, "port of each pod's gate, where requests and health checks go")
	f.DurationVar(&cfg.RequestTimeout, "request-timeout", activator.DefaultRequestTimeout, "time until a response starts, the wait for a ready pod included; then 504")
	f.IntVar(&cfg.QueueDepth, "queue-depth", activator.DefaultQueueDepth, "requests one Service may hold; beyond it 503")
	f.DurationVar(&cfg.ProbeInterval, "probe-interval", activator.DefaultProbeInterval, "how often each pod's gate is health-checked")
	f.DurationVar(&cfg.ProbeTimeout, "probe-timeout", activator.DefaultProbeTimeout, "bound of one health check")
	f.DurationVar(&cfg.IdleTimeout, "idle-timeout", server.DefaultIdleTimeout, "a Service without a request for this long stops being health-checked")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", server.DefaultShutdownTimeout, "after SIGTERM, time for requests in flight and held; then held ones get 503")
	f.BoolVar(&cfg.OnlyRouter, "only-router", false, "this activator is the only router of the pods (one replica, no kube-proxy or ingress routing to them: podgate cluster up without --knative): tell a terminating pod's gate once it sends it nothing more, so its drain ends without the quiet period")
	f.StringVar(&logFormat, "log-format", "text", "log format on stderr: text or json")
	return cmd
}

// checkActivatorFlags reports, as usage errors, the flag values that are
// wrong as written. Zero means the default to server.Config; on
// the command line it is a mistake.
func checkActivatorFlags(cfg server.Config) error {
	err := cmdflags.CheckSet([]cmdflags.TextFlag{{Flag: "--listen", Value: cfg.Listen}, {Flag: "--metrics-listen", Value: cfg.MetricsListen}, {Flag: "--domain", Value: cfg.Domain}},
		[]cmdflags.DurationFlag{
			{Flag: "--request-timeout", Value: cfg.RequestTimeout}, {Flag: "--probe-interval", Value: cfg.ProbeInterval}, {Flag: "--probe-timeout", Value: cfg.ProbeTimeout},
			{Flag: "--idle-timeout", Value: cfg.IdleTimeout}, {Flag: "--shutdown-timeout", Value: cfg.ShutdownTimeout},
		})
	switch {
	case err != nil:
		return err
	case cfg.GatePort <= 0 || cfg.GatePort > 65535:
		return command.Usagef("--gate-port %d: must be from 1 to 65535", cfg.GatePort)
	case cfg.QueueDepth <= 0:
		return command.Usagef("--queue-depth %d: must be positive", cfg.QueueDepth)
	}
	if err := cfg.Check(); err != nil {
		return command.Usagef("%v", err)
	}
	return nil
}

package kubecmds

import (
	"context"
	"log/slog"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/podgate/podgate/admission/webhook"
	"github.com/podgate/podgate/cmd/podgate/internal/cmdflags"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/internal/command"
)

// NewWebhookCmd is `podgate webhook`.
func NewWebhookCmd() *cobra.Command {
	var (
		cfg       webhook.Config
		kubeconf  string
		logFormat string
	)
	cmd := &cobra.Command{
		Use:   "webhook",
		Short: "Run the admission webhook: inject the gate into pods that opted in, refuse invalid workloads",
		Long: `Run podgate's admission webhook on Kubernetes (deploy/base/webhook).

The mutating webhook injects the gate, exactly as 'podgate inject' does, into
every pod created in a namespace labelled podgate.dev/inject=enabled, and into
pods that carry that label themselves; a pod labelled podgate.dev/inject=disabled
opts out. Nothing in kube-system or in podgate's own namespace (--namespace) is
ever touched. The validating webhooks refuse Pods, Deployments and Knative
Services (when Knative Serving is installed) with the messages of
'podgate validate', and pass its warnings on as admission warnings.

The webhook makes its own certificates: a CA and a serving certificate for
SERVICE.NAMESPACE.svc, kept in the Secret --secret of its namespace (so
replicas and restarts agree), the CA bundle patched into the webhook
configurations --mutating-configuration and --validating-configuration.
Certificates are replaced at 2/3 of their lifetime without a restart.

The cluster is found from --kubeconfig, else $KUBECONFIG, else the pod's
service account, else ~/.kube/config. See docs/kubernetes.md.

Exit status: 0 stopped by SIGTERM or SIGINT, 1 could not start or serve,
2 usage error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return onCluster(cmd, kubeconf, logFormat, func() error { return checkWebhookFlags(cfg) },
				func(ctx context.Context, rc *rest.Config, logger *slog.Logger) error {
					cfg.Rest, cfg.Logger = rc, logger
					return webhook.Run(ctx, cfg)
				})
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconf, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then the in-cluster service account, then ~/.kube/config)")
	f.StringVar(&cfg.Listen, "listen", webhook.DefaultListen, "HTTPS address to serve the webhooks, /healthz, /readyz and /metrics on")
	f.StringVar(&cfg.Namespace, "namespace", webhook.DefaultNamespace, "podgate's own namespace: holds the Secret; its pods are never injected")
	f.StringVar(&cfg.Service, "service", webhook.DefaultService, "the Service in front of the webhook; the certificate names SERVICE.NAMESPACE.svc")
	f.StringArrayVar(&cfg.CertHosts, "cert-host", nil, "another DNS name or IP address for the serving certificate (a webhook reached by URL); repeat for more")
	f.StringVar(&cfg.Secret, "secret", webhook.DefaultSecret, "Secret in --namespace holding the CA and the serving certificate")
	f.StringVar(&cfg.MutatingConfiguration, "mutating-configuration", webhook.DefaultConfiguration, "MutatingWebhookConfiguration whose caBundle the webhook keeps")
	f.StringVar(&cfg.ValidatingConfiguration, "validating-configuration", webhook.DefaultConfiguration, "ValidatingWebhookConfiguration whose caBundle the webhook keeps")
	f.StringVar(&cfg.GateImage, "gate-image", contract.DefaultImage, "image of the injected gate container")
	f.BoolVar(&cfg.GateAsContainer, "gate-as-container", false, "inject the gate as a regular container, not a native sidecar (clusters before Kubernetes 1.29)")
	f.StringVar(&cfg.OnlyRouter, "only-router", "", "activator: podgate's activator (run with --only-router) is the only router of every injected pod, so each gate ends its drain on its confirmation instead of the quiet period (podgate cluster up without --knative); default: routers unknown")
	f.StringVar(&cfg.KnativeHandoffURL, "knative-handoff-url", webhook.DefaultKnativeHandoffURL, "where a gate adopted as a Knative revision's queue container hands requests it holds while its pod is not ready (Knative's activator; - for nowhere)")
	f.DurationVar(&cfg.CALifetime, "ca-lifetime", webhook.DefaultCALifetime, "lifetime of the CA; its successor is published at half of it and signs from 2/3")
	f.DurationVar(&cfg.CertLifetime, "cert-lifetime", webhook.DefaultCertLifetime, "lifetime of the serving certificate; replaced at 2/3 of it")
	f.DurationVar(&cfg.SyncPeriod, "sync-period", webhook.DefaultSyncPeriod, "how often the Secret and the caBundles are checked for changes made elsewhere")
	f.StringVar(&logFormat, "log-format", "text", "log format on stderr: text or json")
	return cmd
}

// checkWebhookFlags reports, as usage errors, the flag values that are
// wrong as written.
func checkWebhookFlags(cfg webhook.Config) error {
	err := cmdflags.CheckSet([]cmdflags.TextFlag{
		{Flag: "--listen", Value: cfg.Listen}, {Flag: "--namespace", Value: cfg.Namespace}, {Flag: "--service", Value: cfg.Service}, {Flag: "--secret", Value: cfg.Secret},
		{Flag: "--mutating-configuration", Value: cfg.MutatingConfiguration}, {Flag: "--validating-configuration", Value: cfg.ValidatingConfiguration},
		{Flag: "--gate-image", Value: cfg.GateImage}, {Flag: "--knative-handoff-url", Value: cfg.KnativeHandoffURL},
	}, []cmdflags.DurationFlag{{Flag: "--ca-lifetime", Value: cfg.CALifetime}, {Flag: "--cert-lifetime", Value: cfg.CertLifetime}, {Flag: "--sync-period", Value: cfg.SyncPeriod}})
	if err != nil {
		return err
	}
	if err := cfg.Check(); err != nil {
		return command.Usagef("%v", err)
	}
	return nil
}

package main

import (
	"context"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podgate/podgate/kubenode"
	"github.com/podgate/podgate/runtime"
	"github.com/podgate/podgate/runtime/images"
)

func init() { register(newNodeCmd) }

type nodeOptions struct {
	kubeconfig, name, podCIDR, nodeIP string
	podsDir, apiServerForPods         string
	images                            []string
	imageLayout                       string
}

func newNodeCmd() *cobra.Command {
	var o nodeOptions
	cmd := &cobra.Command{
		Use:   "node --kubeconfig FILE --name NAME",
		Short: "Run the pods a Kubernetes cluster binds to this node, as its kubelet",
		Long: `Register this machine as Node NAME of the cluster the kubeconfig names, keep
the Node and its Lease fresh, and run the pods bound to it as local
processes, with the kubelet's probes, restarts and termination: status
through pods/status, events through the events API, a deleted pod stopped
within its grace period and then removed.

The kubeconfig is the node's credential: a client certificate of user
system:node:NAME in group system:nodes, so the Node authorizer and
NodeRestriction admission limit it as they limit a kubelet.

Pod IPs come from --pod-cidr, which is also the Node's spec.podCIDR. A
container without a command runs its image's local entrypoint:
ghcr.io/podgate/testapp is this binary's test app, others are mapped with
--image NAME=PATH, and images in the OCI image layout of --image-layout
(scripts/image.sh) run their entrypoint, extracted and digest-checked.

Ctrl-C (or SIGTERM) drains the node: it turns NotReady and its pods stop
gracefully and are deleted (a second Ctrl-C kills them at once). See
docs/kubernetes.md.

Exit status: 0 after a clean stop, 1 a failed start (credential, a Node
registered with another pod range), 2 usage error.`,
		Example: `  podgate node --kubeconfig node-1.kubeconfig --name node-1 --pod-cidr 127.0.50.0/24`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(); err != nil {
				return err
			}
			im, err := images.FromFlags(o.images)
			if err != nil {
				return invalidf("%v", err)
			}
			if im, err = withImageLayout(im, o.imageLayout); err != nil {
				return invalidf("%v", err)
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			err = kubenode.Run(ctx, kubenode.Config{
				Kubeconfig: o.kubeconfig, NodeName: o.name, PodCIDR: o.podCIDR, NodeIP: o.nodeIP,
				PodsDir: o.podsDir, APIServerForPods: o.apiServerForPods, Images: im, Version: strings.Fields(buildVersion())[0],
				Output: cmd.OutOrStdout(), Logger: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)),
			})
			if err != nil {
				return invalidf("%v", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "the node's kubeconfig (default $KUBECONFIG)")
	f.StringVar(&o.name, "name", "", "the Node's name (default: this host's name)")
	f.StringVar(&o.podCIDR, "pod-cidr", runtime.DefaultPodCIDR, "the node's pod range: spec.podCIDR and where pod IPs come from (inside 127.0.0.0/8)")
	f.StringVar(&o.nodeIP, "node-ip", runtime.HostIP, "the Node's InternalIP")
	f.StringVar(&o.podsDir, "pods-dir", "", "where each pod's service-account credentials go, a directory per pod (default $TMPDIR/podgate-node-NAME/pods)")
	f.StringVar(&o.apiServerForPods, "api-server-for-pods", "", "HOST:PORT at which pods reach the API server: their $KUBERNETES_SERVICE_HOST/_PORT and kubeconfig (default: the kubeconfig's server)")
	f.StringArrayVar(&o.images, "image", nil, "NAME=PATH: run containers of image NAME that give no command as PATH; repeat for more")
	f.StringVar(&o.imageLayout, "image-layout", "", imageLayoutUsage)
	return cmd
}

// check refuses malformed flags as usage errors (exit 2).
func (o *nodeOptions) check() error {
	if o.kubeconfig == "" {
		return usageErrorf("--kubeconfig: required (or $KUBECONFIG): the node's credential")
	}
	if o.name == "" {
		h, err := os.Hostname()
		if err != nil {
			return usageErrorf("--name: required (the host name is unknown: %v)", err)
		}
		o.name = strings.TrimSuffix(strings.ToLower(h), ".")
	}
	if errs := validation.IsDNS1123Subdomain(o.name); len(errs) > 0 {
		return usageErrorf("--name %q: %s", o.name, strings.Join(errs, "; "))
	}
	if err := runtime.CheckPodCIDR(o.podCIDR); err != nil {
		return usageErrorf("%v", err)
	}
	if net.ParseIP(o.nodeIP) == nil {
		return usageErrorf("--node-ip %q: not an IP address", o.nodeIP)
	}
	return checkImageFlags(o.images)
}

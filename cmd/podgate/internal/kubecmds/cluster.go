package kubecmds

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/podgate/podgate/internal/command"
	"github.com/podgate/podgate/kube/cluster"
	"github.com/podgate/podgate/kube/install"
	"github.com/podgate/podgate/node/kube"
)

// NewClusterCmd is `podgate cluster`.
func NewClusterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Run a whole Kubernetes cluster here: the real control plane and podgate as its node",
		Long: `A Kubernetes cluster on this machine without docker: etcd, kube-apiserver,
kube-controller-manager and kube-scheduler (built from source once) and
podgate's node agent as the kubelet, all in a network namespace of their
own, with the API server forwarded to a loopback port of the host.
Needs root. See docs/kubernetes.md.`,
	}
	cmd.AddCommand(newClusterUpCmd(), newClusterDownCmd(), newClusterChildCmd())
	return cmd
}

func newClusterUpCmd() *cobra.Command {
	var cfg cluster.Config
	cmd := &cobra.Command{
		Use:   "up [--dir DIR] [--pod-cidr CIDR] [--listen 127.0.0.1:PORT] [--front-door 127.0.0.1:PORT] [--no-install] [--knative [--queue-proxy gate|knative] [--ingress 127.0.0.1:PORT]]",
		Short: "Start a cluster with podgate installed and run it in the foreground until Ctrl-C",
		Long: `Start a cluster: the control plane's binaries (a cold build takes 5 to 15
minutes, then a cache hit), a network namespace with the bridge podgate0
(the pod CIDR's first address is the node's), the control plane, the node,
and the API server forwarded to --listen on the host. Once the node is
Ready, DIR/kubeconfig holds the admin's credential:

  export KUBECONFIG=DIR/kubeconfig
  kubectl get nodes

Then it installs podgate, as kubectl apply -k deploy/base would on any
cluster: podgate's image (this podgate, a static binary, in an OCI layout
in DIR/image that the node runs images from), the webhook and the
activator started from it, and prints the front door once both are
ready: --front-door on the host, forwarded to the activator's pods.
--no-install starts a bare cluster.

With --knative it then installs Knative Serving as a real cluster runs it:
kube-proxy (every Service's ClusterIP routes) and CoreDNS (cluster DNS
for every pod), Knative Serving v0.50.0 from Knative's own manifests,
and Traefik as the Knative ingress, forwarded to --ingress on the host.
Their binaries are built from the Go module proxy once (cold: tens of
minutes, then a cache hit). Every revision's queue sidecar is podgate's
gate, or Knative's own queue-proxy with --queue-proxy knative.

Ctrl-C stops everything: the node first (its pods terminate gracefully; a
second Ctrl-C kills them at once, a third kills everything), the control
plane, the network. After a crash: podgate cluster down --dir DIR.

Limits: without --knative no kube-proxy (ClusterIPs do not route; pods
reach the API server at the node's address) and no cluster DNS; no
kubelet API (no kubectl logs or exec).

Exit status: 0 after a clean stop, 1 a failed start or install or a
cluster that ended on its own, 2 usage error.`,
		Example: `  sudo podgate cluster up --dir /tmp/c1 --listen 127.0.0.1:6443`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Version = strings.Fields(Version)[0]
			cfg.Stdout, cfg.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if cfg.MaxPods < 1 {
				return command.Usagef("--max-pods %d: want 1 or more", cfg.MaxPods)
			}
			if err := cfg.Check(); err != nil {
				return command.Usagef("%v", err)
			}
			if err := cluster.Up(command.Context(cmd), cfg); err != nil {
				return command.Invalidf("%v", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Dir, "dir", cluster.DefaultDir(), "the cluster's directory: kubeconfig, pid file, the control plane's PKI, data and logs")
	f.StringVar(&cfg.PodCIDR, "pod-cidr", cluster.DefaultPodCIDR, "the pods' range inside the cluster's network namespace; the node takes its first address")
	f.IntVar(&cfg.MaxPods, "max-pods", kube.DefaultMaxPods, "the node's pod capacity (the kubelet's flag); the pod range's size bounds it too")
	f.StringVar(&cfg.Listen, "listen", cluster.DefaultListen, "host loopback address of the API server (port 0: a free one)")
	f.StringVar(&cfg.NodeName, "name", cluster.DefaultNodeName, "the node's name")
	f.StringArrayVar(&cfg.Images, "image", nil, "NAME=PATH: run containers of image NAME that give no command as PATH; repeat for more")
	f.BoolVar(&cfg.NoInstall, "no-install", false, "a bare cluster: no podgate image, webhook, activator or front door")
	f.StringVar(&cfg.FrontDoor, "front-door", cluster.DefaultFrontDoor, "host loopback address of the front door, forwarded to the activator (port 0: a free one)")
	f.BoolVar(&cfg.Knative, "knative", false, "also install Knative Serving, cluster networking (kube-proxy, CoreDNS) and Traefik as its ingress, built from source once")
	f.StringVar(&cfg.QueueProxy, "queue-proxy", cluster.QueueProxyGate, "with --knative, every revision's queue sidecar: gate (podgate's) or knative (Knative's queue-proxy)")
	f.StringVar(&cfg.Ingress, "ingress", cluster.DefaultIngress, "with --knative, host loopback address forwarded to Knative's ingress (port 0: a free one)")
	f.DurationVar(&cfg.InstallTimeout, "install-timeout", install.DefaultTimeout, "how long the webhook and the activator may take to be ready once applied")
	return cmd
}

func newClusterDownCmd() *cobra.Command {
	var dir string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "down [--dir DIR]",
		Short: "Stop the cluster running in DIR (one left behind by a crash, or in another terminal)",
		Long: `Stop the cluster recorded in DIR's pid file: the node stops (its pods are
killed at once if it was stopping already), then the control plane; what
still runs after --timeout is killed. Nothing of the cluster is left
afterwards, and no namespace: they go with the last process.

With no cluster running it says so and exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := cluster.Down(command.Context(cmd), dir, timeout, cmd.ErrOrStderr())
			if errors.Is(err, cluster.ErrNotRunning) {
				fmt.Fprintln(cmd.ErrOrStderr(), "podgate:", err)
				return nil
			}
			if err != nil {
				return command.Invalidf("%v", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", cluster.DefaultDir(), "the cluster's directory, as given to cluster up")
	cmd.Flags().DurationVar(&timeout, "timeout", cluster.DefaultDownTimeout, "how long the cluster may take to stop before what is left is killed")
	return cmd
}

// newClusterChildCmd is the cluster process Up starts; not for people.
func newClusterChildCmd() *cobra.Command {
	var dir, config string
	cmd := &cobra.Command{
		Use:    "child --dir DIR --config JSON",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cluster.Child(command.Context(cmd), dir, config, cmd.OutOrStdout(), cmd.ErrOrStderr()); err != nil {
				return command.Invalidf("%v", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the cluster's directory")
	cmd.Flags().StringVar(&config, "config", "", "the cluster process's configuration (JSON, from cluster up)")
	return cmd
}

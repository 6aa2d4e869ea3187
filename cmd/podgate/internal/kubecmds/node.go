package kubecmds

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podgate/podgate/cmd/podgate/internal/cmdflags"
	"github.com/podgate/podgate/internal/command"
	"github.com/podgate/podgate/node"
	"github.com/podgate/podgate/node/images"
	"github.com/podgate/podgate/node/kube"
	"github.com/podgate/podgate/node/netns"
	"github.com/podgate/podgate/node/netns/nodenet"
	"github.com/podgate/podgate/node/poddns"
)

// The pod networks of --pod-network.
const (
	podNetworkLoopback = "loopback"
	podNetworkNetns    = "netns"
	// defaultNetnsPodCIDR is --pod-cidr's default with --pod-network
	// netns: a node's share of the pod range `podgate cluster up` uses.
	defaultNetnsPodCIDR = "10.244.0.0/24"
)

type nodeOptions struct {
	kubeconfig, name, podCIDR, nodeIP string
	podsDir, apiServerForPods         string
	images                            []string
	imageLayout                       string
	podNetwork                        string
	leaseSeconds                      int32
	maxPods                           int
	clusterDNS                        []string
	clusterDomain, resolvConf         string
	// The kubelet API's (served when the three files are given).
	tlsCert, tlsKey, clientCA string
	kubeletPort               int
}

// newNodeCmd is `podgate node`; it is long because of its help text, the
// node's user documentation beside its flags.
// NewNodeCmd is `podgate node`.
func NewNodeCmd() *cobra.Command {
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

Pod IPs come from --pod-cidr, which is also the Node's spec.podCIDR. With
--pod-network loopback (the default) they are host loopback addresses,
which the API server refuses in EndpointSlices: Services get no endpoints
for this node's pods (the node says so when it starts). With --pod-network
netns each pod gets a network namespace of its own and an address of the
range on a bridge; the node must then run (as root) in a network namespace
of its own, never the host's, with the API server reachable from there
(podgate cluster up runs its node that way).

A container without a command runs its image's local entrypoint:
ghcr.io/podgate/testapp is this binary's test app, others are mapped with
--image NAME=PATH, and images in the OCI image layout of --image-layout
(hack/image.sh) run their entrypoint, extracted and digest-checked.

With --tls-cert-file, --tls-private-key-file and --client-ca-file the node
serves the kubelet API on --node-ip:--port (10250): kubectl logs, exec and
port-forward reach its pods through the API server, which must trust the
certificate (--kubelet-certificate-authority) and show a client certificate
of that CA (--kubelet-client-certificate) whose user may use nodes/proxy
(the ClusterRole system:kubelet-api-admin); each request is authorized by
a SubjectAccessReview. Without them it serves none.

Ctrl-C (or SIGTERM) drains the node: it turns NotReady and its pods stop
gracefully and are deleted (a second Ctrl-C kills them at once). See
docs/kubernetes.md.

Exit status: 0 after a clean stop, 1 a failed start (credential, a Node
registered with another pod range), 2 usage error.`,
		Example: `  podgate node --kubeconfig node-1.kubeconfig --name node-1 --pod-cidr 127.0.50.0/24`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(cmd); err != nil {
				return err
			}
			im, err := images.FromFlags(o.images)
			if err != nil {
				return command.Invalidf("%v", err)
			}
			if im, err = cmdflags.WithImageLayout(im, o.imageLayout); err != nil {
				return command.Invalidf("%v", err)
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			cfg := kube.Config{
				Kubeconfig: o.kubeconfig, NodeName: o.name, PodCIDR: o.podCIDR, NodeIP: o.nodeIP, MaxPods: o.maxPods,
				PodsDir: o.podsDir, APIServerForPods: o.apiServerForPods, Images: im, Version: strings.Fields(Version)[0],
				LeaseDurationSeconds: o.leaseSeconds, LeaseRenewInterval: time.Duration(o.leaseSeconds) * time.Second / 4,
				Output: cmd.OutOrStdout(), Logger: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)),
				ClusterDomain: o.clusterDomain, ResolvConf: o.resolvConf,
			}
			for _, a := range o.clusterDNS {
				cfg.ClusterDNS = append(cfg.ClusterDNS, netip.MustParseAddr(a)) // checked
			}
			if cfg.KubeletAPI, err = o.kubeletAPI(); err != nil {
				return command.Invalidf("%v", err)
			}
			closeNetwork, err := o.network(&cfg)
			if err != nil {
				return command.Invalidf("%v", err)
			}
			err = kube.Run(ctx, cfg)
			if cerr := closeNetwork(); cerr != nil {
				err = errors.Join(err, cerr)
			}
			if err != nil {
				return command.Invalidf("%v", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "the node's kubeconfig (default $KUBECONFIG)")
	f.StringVar(&o.name, "name", "", "the Node's name (default: this host's name)")
	f.StringVar(&o.podNetwork, "pod-network", podNetworkLoopback, "where pods get their addresses: loopback (addresses of --pod-cidr on the host, which the API server refuses in EndpointSlices) or netns (a network namespace per pod behind a bridge, in the node's own network namespace; needs root)")
	f.StringVar(&o.podCIDR, "pod-cidr", node.DefaultPodCIDR, "the node's pod range: spec.podCIDR and where pod IPs come from (inside 127.0.0.0/8; with --pod-network netns outside it, default "+defaultNetnsPodCIDR+")")
	f.IntVar(&o.maxPods, "max-pods", kube.DefaultMaxPods, "the node's pod capacity (the kubelet's flag); the pod range's size bounds it too")
	f.StringVar(&o.nodeIP, "node-ip", node.HostIP, "the Node's InternalIP (with --pod-network netns default: the bridge's address, the pod range's first)")
	f.Int32Var(&o.leaseSeconds, "node-lease-duration-seconds", kube.DefaultLeaseDurationSeconds, "the node's Lease duration, renewed every quarter of it (the kubelet's flag)")
	f.StringVar(&o.podsDir, "pods-dir", "", "where each pod's files go (credentials, DNS files, volumes), a directory per pod, emptied at start (default $TMPDIR/podgate-node-NAME/pods, removed at exit)")
	f.StringVar(&o.apiServerForPods, "api-server-for-pods", "", "HOST:PORT at which pods reach the API server: their $KUBERNETES_SERVICE_HOST/_PORT and kubeconfig (default: the kubeconfig's server)")
	f.StringSliceVar(&o.clusterDNS, "cluster-dns", nil, "IP addresses of the cluster DNS servers, comma-separated: the nameservers of pods with dnsPolicy ClusterFirst (the kubelet's flag; without it they get the node's resolv.conf)")
	f.StringVar(&o.clusterDomain, "cluster-domain", poddns.DefaultClusterDomain, "the cluster's DNS domain: ClusterFirst pods search NAMESPACE.svc.DOMAIN, svc.DOMAIN and DOMAIN first (the kubelet's flag)")
	f.StringVar(&o.resolvConf, "resolv-conf", node.DefaultResolvConf, "the node's resolv.conf: what dnsPolicy Default pods get, and the search domains ClusterFirst pods add (the kubelet's flag)")
	f.StringVar(&o.tlsCert, "tls-cert-file", "", "the kubelet API's serving certificate (PEM), valid for --node-ip and trusted by the API server's --kubelet-certificate-authority; with --tls-private-key-file and --client-ca-file the node serves kubectl logs, exec and port-forward (the kubelet's flag)")
	f.StringVar(&o.tlsKey, "tls-private-key-file", "", "the key of --tls-cert-file (the kubelet's flag)")
	f.StringVar(&o.clientCA, "client-ca-file", "", "the CA of the client certificates the kubelet API accepts: the one of the API server's --kubelet-client-certificate (the kubelet's flag)")
	f.IntVar(&o.kubeletPort, "port", 10250, "the kubelet API's port on --node-ip, published in the Node; 0 takes a free one (the kubelet's flag)")
	f.StringArrayVar(&o.images, "image", nil, "NAME=PATH: run containers of image NAME that give no command as PATH; repeat for more")
	f.StringVar(&o.imageLayout, "image-layout", "", cmdflags.ImageLayoutUsage)
	return cmd
}

// check refuses malformed flags as usage errors (exit 2), and fills in
// the defaults that depend on --pod-network.
func (o *nodeOptions) check(cmd *cobra.Command) error {
	if o.kubeconfig == "" {
		return command.Usagef("--kubeconfig: required (or $KUBECONFIG): the node's credential")
	}
	if o.name == "" {
		h, err := os.Hostname()
		if err != nil {
			return command.Usagef("--name: required (the host name is unknown: %v)", err)
		}
		o.name = strings.TrimSuffix(strings.ToLower(h), ".")
	}
	if errs := validation.IsDNS1123Subdomain(o.name); len(errs) > 0 {
		return command.Usagef("--name %q: %s", o.name, strings.Join(errs, "; "))
	}
	for _, a := range o.clusterDNS {
		if _, err := netip.ParseAddr(a); err != nil {
			return command.Usagef("--cluster-dns %q: not an IP address", a)
		}
	}
	if errs := validation.IsDNS1123Subdomain(o.clusterDomain); len(errs) > 0 {
		return command.Usagef("--cluster-domain %q: %s", o.clusterDomain, strings.Join(errs, "; "))
	}
	if o.resolvConf == "" {
		return command.Usagef("--resolv-conf: required (the node's resolv.conf; the kubelet's \"\" for none is not supported)")
	}
	if o.maxPods < 1 {
		return command.Usagef("--max-pods %d: want 1 or more", o.maxPods)
	}
	if o.leaseSeconds < 4 {
		return command.Usagef("--node-lease-duration-seconds %d: want 4 or more (the Lease is renewed every quarter of it)", o.leaseSeconds)
	}
	switch o.podNetwork {
	case podNetworkLoopback:
		if err := node.CheckPodCIDR(o.podCIDR); err != nil {
			return command.Usagef("%v", err)
		}
	case podNetworkNetns:
		if !cmd.Flags().Changed("pod-cidr") {
			o.podCIDR = defaultNetnsPodCIDR
		}
		p, err := netns.ParseCIDR(o.podCIDR)
		if err != nil {
			return command.Usagef("--pod-cidr: %v", err)
		}
		if !cmd.Flags().Changed("node-ip") {
			o.nodeIP = p.Addr().Next().String() // the bridge's: SetupCluster gives it the first address
		}
	default:
		return command.Usagef("--pod-network %q: want %s or %s", o.podNetwork, podNetworkLoopback, podNetworkNetns)
	}
	if net.ParseIP(o.nodeIP) == nil {
		return command.Usagef("--node-ip %q: not an IP address", o.nodeIP)
	}
	if given := countSet(o.tlsCert, o.tlsKey, o.clientCA); given != 0 && given != 3 {
		return command.Usagef("--tls-cert-file, --tls-private-key-file and --client-ca-file: all three or none (the kubelet API needs them all)")
	}
	if o.kubeletPort < 0 || o.kubeletPort > 65535 {
		return command.Usagef("--port %d: want 0 to 65535", o.kubeletPort)
	}
	return cmdflags.CheckImageFlags(o.images)
}

// network sets up the pod network of --pod-network netns in the node's
// own network namespace — never the host's, which podnet refuses: pod
// IPs of a bridge there would be routes on the machine's real network —
// and returns its removal (nothing to remove on the loopback network).
func (o *nodeOptions) network(cfg *kube.Config) (closeNetwork func() error, err error) {
	if o.podNetwork != podNetworkNetns {
		return func() error { return nil }, nil
	}
	if err := netns.Preflight(); err != nil {
		return nil, fmt.Errorf("--pod-network netns: %w", err)
	}
	c, err := netns.SetupCluster(o.podCIDR)
	if err != nil {
		return nil, fmt.Errorf("--pod-network netns: %w; start the node in a network namespace of its own from which the API server is reachable (unshare -n, ip netns exec), or use --pod-network loopback (docs/kubernetes.md)", err)
	}
	cfg.Network = nodenet.New(c)
	return c.Close, nil
}

func countSet(vals ...string) int {
	n := 0
	for _, v := range vals {
		if v != "" {
			n++
		}
	}
	return n
}

// kubeletAPI is the kubelet API of the TLS flags; nil without them.
func (o *nodeOptions) kubeletAPI() (*kube.KubeletAPI, error) {
	if o.tlsCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file, --tls-private-key-file: %w", err)
	}
	ca, err := os.ReadFile(o.clientCA)
	if err != nil {
		return nil, fmt.Errorf("--client-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("--client-ca-file %s: no PEM certificate in it", o.clientCA)
	}
	return &kube.KubeletAPI{Cert: cert, ClientCAs: pool, Listen: net.JoinHostPort(o.nodeIP, strconv.Itoa(o.kubeletPort))}, nil
}

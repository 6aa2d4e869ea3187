package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/podgate/podgate/node"
	"github.com/podgate/podgate/node/images"
)

// Defaults of Config.
const (
	// DefaultLeaseDurationSeconds and DefaultLeaseRenewInterval are the
	// kubelet's (--node-lease-duration-seconds, a quarter of it).
	DefaultLeaseDurationSeconds = 40
	DefaultLeaseRenewInterval   = 10 * time.Second
	// DefaultStatusInterval is how often the Node's status is patched
	// while the Lease says the node lives (the kubelet's
	// --node-status-report-frequency is 5 minutes; virtual-kubelet's 1).
	DefaultStatusInterval = time.Minute
)

// Config is a `podgate node`.
type Config struct {
	// Kubeconfig is the path of the node's kubeconfig: a credential of
	// user system:node:NAME in group system:nodes, so that the Node
	// authorizer and NodeRestriction treat it as the kubelet of NAME.
	Kubeconfig string
	// RESTConfig, when set, is used instead of Kubeconfig.
	RESTConfig *rest.Config
	// NodeName is the Node's name. Required.
	NodeName string
	// PodCIDR is the node's spec.podCIDR and the range its pods take
	// addresses from (default node.DefaultPodCIDR; with Network, the
	// network's range).
	PodCIDR string
	// MaxPods is the node's pod capacity, as the kubelet's --max-pods
	// (0: DefaultMaxPods); the pod range's size bounds it too.
	MaxPods int
	// NodeIP is the node's InternalIP and its pods' status.hostIP
	// (default node.HostIP; required with Network: the node's address
	// as its pods reach it).
	NodeIP string
	// Network, when set, gives each pod a network of its own (package
	// node/netns/nodenet: a network namespace, an address of the bridge's
	// range, its processes started inside). Nil is the loopback network
	// over PodCIDR, whose addresses the API server refuses in
	// EndpointSlices.
	Network node.PodNetwork
	// Images resolves images of containers without a command (the zero
	// value: images.Default).
	Images images.Map
	// Version is podgate's, reported as the container runtime's version.
	Version string
	// LeaseDurationSeconds and LeaseRenewInterval shape the node's Lease
	// (defaults above); StatusInterval how often the Node's status is
	// patched.
	LeaseDurationSeconds int32
	LeaseRenewInterval   time.Duration
	StatusInterval       time.Duration
	// Output receives the containers' output, each line prefixed
	// "pod/container | "; nil discards it.
	Output io.Writer
	// Logger reports the node's progress and problems; nil discards.
	Logger *slog.Logger
	// Ready, when set, is called once the Node is registered and the
	// agent watches its pods.
	Ready func()
	// PodsDir holds a directory per pod, named after its UID: its
	// service-account credentials (serviceaccount/: token, ca.crt,
	// namespace, kubeconfig) and, on a pod network, its DNS files and
	// volumes (node.Options.PodsDir). The node empties it when it starts;
	// default $TMPDIR/podgate-node-NAME/pods, removed when Run returns.
	PodsDir string
	// APIServerForPods is the API server's host:port as pods reach it:
	// their $KUBERNETES_SERVICE_HOST and _PORT and their kubeconfig's
	// server (default: the host and port of the node's own kubeconfig).
	// There is no kube-proxy, so not the `kubernetes` Service's ClusterIP.
	APIServerForPods string
	// WithdrawTimeout bounds the wait of a liveness or startup kill for
	// the pod's endpoint to turn not ready (default
	// withdrawal.DefaultTimeout). The wait needs a pod network (with
	// loopback addresses no EndpointSlice lists a pod) and the right to
	// read EndpointSlices (ClusterRole withdrawal.Role); without it the
	// node kills once the not-ready status is written.
	WithdrawTimeout time.Duration
	// ClusterDNS, ClusterDomain and ResolvConf are the kubelet's
	// --cluster-dns, --cluster-domain and --resolv-conf: what each pod's
	// /etc/resolv.conf is made of (node.Options' fields of those names;
	// a pod gets its own files on a pod network only).
	ClusterDNS    []netip.Addr
	ClusterDomain string
	ResolvConf    string
	// KubeletAPI, when set, serves the kubelet API on the node's
	// address (logs, exec, port-forward through the API server); nil
	// serves none, and those requests fail at the API server.
	KubeletAPI *KubeletAPI
	// Signals, when set, is where Run takes its stop signals from (the
	// first drains the node, the second kills its pods) instead of
	// catching SIGINT and SIGTERM itself: for a caller that catches them
	// before Run starts. A signal must reach one channel only, or it
	// would count twice.
	Signals <-chan os.Signal

	// kubeletPort is the kubelet API's port, once it listens.
	kubeletPort int32
}

func (cfg Config) withDefaults() (Config, error) {
	if cfg.NodeName == "" {
		return cfg, errors.New("node name: required")
	}
	if errs := validation.IsDNS1123Subdomain(cfg.NodeName); len(errs) > 0 {
		return cfg, fmt.Errorf("node name %q: %s", cfg.NodeName, strings.Join(errs, "; "))
	}
	if cfg.Kubeconfig == "" && cfg.RESTConfig == nil {
		return cfg, errors.New("kubeconfig: required")
	}
	if err := cfg.checkNetwork(); err != nil {
		return cfg, err
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.LeaseDurationSeconds <= 0 {
		cfg.LeaseDurationSeconds = DefaultLeaseDurationSeconds
	}
	if cfg.LeaseRenewInterval <= 0 {
		cfg.LeaseRenewInterval = DefaultLeaseRenewInterval
	}
	if cfg.StatusInterval <= 0 {
		cfg.StatusInterval = DefaultStatusInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PodsDir == "" {
		cfg.PodsDir = filepath.Join(os.TempDir(), "podgate-node-"+cfg.NodeName, "pods")
	}
	if cfg.APIServerForPods != "" {
		if _, _, err := net.SplitHostPort(cfg.APIServerForPods); err != nil {
			return cfg, fmt.Errorf("API server for pods %q: want HOST:PORT: %w", cfg.APIServerForPods, err)
		}
	}
	return cfg, nil
}

// checkNetwork fills in and checks PodCIDR and NodeIP for the network.
func (cfg *Config) checkNetwork() error {
	if cfg.Network != nil {
		_, cidr := cfg.Network.Capacity()
		if cfg.PodCIDR != "" && cfg.PodCIDR != cidr.String() {
			return fmt.Errorf("pod CIDR %s: the pod network's range is %s", cfg.PodCIDR, cidr)
		}
		cfg.PodCIDR = cidr.String()
		if _, err := netip.ParseAddr(cfg.NodeIP); err != nil {
			return fmt.Errorf("node IP %q: required with a pod network, the node's address as its pods reach it: %w", cfg.NodeIP, err)
		}
		return nil
	}
	if cfg.PodCIDR == "" {
		cfg.PodCIDR = node.DefaultPodCIDR
	}
	if err := node.CheckPodCIDR(cfg.PodCIDR); err != nil {
		return err
	}
	if cfg.NodeIP == "" {
		cfg.NodeIP = node.HostIP
	}
	return nil
}

// agentOptions are the node agent's network options: the pod network
// and the node's address, or the loopback range.
func (cfg Config) agentOptions(o node.Options) node.Options {
	if cfg.Network != nil {
		o.Network, o.HostIP = cfg.Network, netip.MustParseAddr(cfg.NodeIP)
		return o
	}
	o.PodCIDR = cfg.PodCIDR
	if ip, err := netip.ParseAddr(cfg.NodeIP); err == nil {
		o.HostIP = ip
	}
	return o
}

// podCredentials prepares what gives pods their service-account identity
// (see credentials).
func (cfg Config) podCredentials(rc *rest.Config, core corev1client.CoreV1Interface) (*credentials, error) {
	server := cfg.APIServerForPods
	if server == "" {
		u, err := url.Parse(rc.Host)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("API server for pods: the kubeconfig's server %q has no host: set it", rc.Host)
		}
		server = u.Host
		if u.Port() == "" {
			server = net.JoinHostPort(u.Hostname(), "443")
		}
		if ip, err := netip.ParseAddr(u.Hostname()); err == nil && ip.IsLoopback() && cfg.Network != nil {
			cfg.Logger.Warn("pods in network namespaces of their own cannot reach the API server at the kubeconfig's loopback address: set the API server for pods (--api-server-for-pods)",
				"server", server)
		}
	}
	ca := rc.CAData
	if len(ca) == 0 && rc.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(rc.CAFile); err != nil {
			return nil, fmt.Errorf("the kubeconfig's CA: %w", err)
		}
	}
	// Searchable, not listable: a container that runs as another user
	// (runAsUser) reads its own pod's credentials by their path.
	if err := os.MkdirAll(cfg.PodsDir, 0o711); err != nil {
		return nil, fmt.Errorf("pods directory: %w", err)
	}
	if err := os.Chmod(cfg.PodsDir, 0o711); err != nil {
		return nil, fmt.Errorf("pods directory: %w", err)
	}
	if err := ownDirs(cfg.PodsDir, filepath.Dir(cfg.PodsDir)); err != nil {
		return nil, fmt.Errorf("pods directory: %w", err)
	}
	if err := removeLeftovers(cfg.PodsDir); err != nil {
		return nil, fmt.Errorf("pods directory: %w", err)
	}
	return &credentials{core: core, dir: cfg.PodsDir, server: server, caData: ca, clock: clock.RealClock{}, log: cfg.Logger}, nil
}

// restConfig loads the credential, with the kubelet's request rates
// (client-go's default of 5 per second would hold up status writes and
// events of a node starting many pods).
func (cfg Config) restConfig() (*rest.Config, error) {
	rc := cfg.RESTConfig
	if rc == nil {
		var err error
		if rc, err = clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", cfg.Kubeconfig, err)
		}
	}
	rc = rest.CopyConfig(rc)
	if rc.QPS == 0 {
		rc.QPS, rc.Burst = 50, 100
	}
	if rc.UserAgent == "" {
		rc.UserAgent = "podgate-node/" + cfg.Version
	}
	return rc, nil
}

// Run registers the node, runs the pods the API server binds to it until
// ctx ends or SIGINT/SIGTERM, then drains it: the Node turns NotReady, its
// pods stop gracefully (a second signal kills them at once) and are
// deleted, as a node drain evicts them.
func Run(ctx context.Context, cfg Config) error {
	defaultPodsDir := cfg.PodsDir == ""
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	if defaultPodsDir {
		defer removeOwnDir(filepath.Dir(cfg.PodsDir))
	}
	rc, err := cfg.restConfig()
	if err != nil {
		return err
	}
	core, err := corev1client.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	coord, err := coordclient.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	if err := checkRegistered(ctx, core.Nodes(), cfg); err != nil {
		return err
	}
	sigs := cfg.Signals
	if sigs == nil {
		own := make(chan os.Signal, 2)
		signal.Notify(own, syscall.SIGINT, syscall.SIGTERM)
		defer signal.Stop(own)
		sigs = own
	}

	begin := time.Now()
	kubelet, err := cfg.listenKubeletAPI()
	if err != nil {
		return err
	}
	if kubelet != nil {
		cfg.kubeletPort = kubelet.port
	}
	ctrl, stopController, err := register(ctx, cfg, core.Nodes(), coord, sigs)
	if ctrl == nil {
		kubelet.close()
		return err
	}
	agent, stopAll, err := cfg.newAgent(ctx, rc, core)
	stopController = stopBoth(stopController, stopAll)
	if err != nil {
		kubelet.close()
		stopController()
		return err
	}
	// Until the pods are gone: `kubectl logs -f` follows a pod through
	// the drain.
	kubeletCtx, stopKubelet := context.WithCancel(context.WithoutCancel(ctx))
	waitKubelet, err := kubelet.serve(kubeletCtx, cfg, rc, agent)
	if err != nil {
		stopKubelet()
		stopController()
		return err
	}
	defer func() { stopKubelet(); waitKubelet() }()
	cfg.Logger.Info("node registered and running its pods", "node", cfg.NodeName, "podCIDR", cfg.PodCIDR,
		"took", time.Since(begin).Round(time.Millisecond))
	cfg.warnLoopback()
	if cfg.Ready != nil {
		cfg.Ready()
	}
	var runErr error
	select {
	case <-ctx.Done():
	case sig := <-sigs:
		cfg.Logger.Info("stopping pods gracefully (again to kill them now)", "signal", sig.String())
	case <-ctrl.Done():
		runErr = fmt.Errorf("node controller: %w", ctrl.Err())
	}
	return errors.Join(runErr, drain(cfg, core, agent, stopController, sigs))
}

// newAgent makes the node agent on the API server: pods, status and
// events through core, the pods' service-account credentials, and the
// EndpointSlice watch that holds liveness kills; stop ends that watch.
func (cfg Config) newAgent(ctx context.Context, rc *rest.Config, core corev1client.CoreV1Interface) (agent *node.Agent, stop func(), err error) {
	creds, err := cfg.podCredentials(rc, core)
	if err != nil {
		return nil, func() {}, err
	}
	withdrawals, stop := cfg.startWithdrawals(ctx, rc)
	pods := NewPods(core, cfg.Logger)
	opts := cfg.agentOptions(node.Options{
		Events: NewEvents(core), Pods: pods, Source: pods,
		Images: cfg.Images, NodeName: cfg.NodeName,
		Output: cfg.Output, Logger: cfg.Logger, PodSetup: creds.setup, Volumes: objects{core},
		ClusterDNS: cfg.ClusterDNS, ClusterDomain: cfg.ClusterDomain, ResolvConf: cfg.ResolvConf,
		PodsDir: cfg.PodsDir,
	})
	if withdrawals != nil {
		opts.Withdrawal = withdrawals
	}
	agent, err = node.New(opts)
	return agent, stop, err
}

// drain ends the node's heartbeats, marks it NotReady (the scheduler
// stops placing pods there at once, instead of after the Lease expires),
// marks its pods deleted in the API (deleteOwnPods) and stops them; a
// signal meanwhile kills them at once.
func drain(cfg Config, core corev1client.CoreV1Interface, agent *node.Agent, stopController func(), sigs <-chan os.Signal) error {
	nodes := core.Nodes()
	stopController()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	// Conditions merge by type: only Ready changes.
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"False","reason":"KubeletNotReady","message":"podgate node is shutting down","lastHeartbeatTime":%q,"lastTransitionTime":%q}]}}`,
		time.Now().UTC().Format(time.RFC3339), time.Now().UTC().Format(time.RFC3339))
	if _, err := nodes.Patch(ctx, cfg.NodeName, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		cfg.Logger.Warn("mark the node NotReady", "node", cfg.NodeName, "err", err)
	}
	deleteOwnPods(ctx, core, cfg.NodeName, cfg.Logger)
	force, kill := context.WithCancel(context.Background())
	defer kill()
	go func() {
		select {
		case sig := <-sigs:
			cfg.Logger.Info("killing pods now", "signal", sig.String())
			kill()
		case <-force.Done():
		}
	}()
	return agent.Shutdown(force)
}

// warnLoopback says, once at the start, what loopback pod addresses cost
// on a cluster: the API server refuses them in EndpointSlices (an
// address in 127.0.0.0/8 "may not be in the loopback range"), so the
// EndpointSlice controller fails every sync of a Service that selects
// one of this node's pods, and the Service gets no endpoints.
func (cfg Config) warnLoopback() {
	if cfg.Network != nil {
		return
	}
	cfg.Logger.Warn("pods of this node get loopback addresses, which the API server refuses in EndpointSlices: "+
		"a Service selecting them gets no endpoints. For pod IPs of their own run the node in a network namespace "+
		"of its own with --pod-network netns, or run podgate cluster up (docs/kubernetes.md)",
		"node", cfg.NodeName, "podCIDR", cfg.PodCIDR)
}

// removeOwnDir removes the node's default pods' directory's parent, in
// the temporary directory, once the node has stopped its pods (a killed
// node's is emptied at its next start) — if it is this user's: a node
// refused for another user's directory leaves it alone.
func removeOwnDir(dir string) {
	if ownDirs(dir, filepath.Dir(dir)) == nil {
		_ = os.RemoveAll(dir)
	}
}

// removeLeftovers empties the pods' directory of what a node that was
// killed left there: its pods' processes died with it, and each pod the
// node runs now gets its directory anew (the kubelet removes orphaned
// pods' directories likewise).
func removeLeftovers(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// ownDirs checks that dir is a directory of this process's user, not a
// symbolic link, in a parent only its owner (this user or root) can
// change or a sticky one (a shared temporary directory): the pods'
// credentials are readable by path (mode 0644 in searchable directories,
// for containers of other users), so a directory another user made first,
// under a name the node chose, must not be used.
func ownDirs(dir, parent string) error {
	me := os.Geteuid()
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || !ok || int(st.Uid) != me {
		return fmt.Errorf("%s is not a directory of this user's (uid %d): another user may have made it; remove it or choose another", dir, me)
	}
	pi, err := os.Stat(parent)
	if err != nil {
		return err
	}
	st, ok := pi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != me && st.Uid != 0 || pi.Mode().Perm()&0o022 != 0 && pi.Mode()&os.ModeSticky == 0 {
		return fmt.Errorf("%s: its directory %s may be changed by other users; choose another", dir, parent)
	}
	return nil
}

package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podgate/podgate/kube/controlplane"
	"github.com/podgate/podgate/kube/install"
	"github.com/podgate/podgate/node/images"
	"github.com/podgate/podgate/node/netns"
)

// Defaults of Config.
const (
	DefaultPodCIDR  = "10.244.0.0/16"
	DefaultListen   = "127.0.0.1:0"
	DefaultNodeName = "podgate"
	// DefaultFrontDoor is a free port: `podgate run`'s front door may
	// hold 8080 beside a cluster.
	DefaultFrontDoor = "127.0.0.1:0"
	// DefaultIngress is the host's loopback address forwarded to
	// Knative's ingress with --knative: a free port.
	DefaultIngress = "127.0.0.1:0"
)

// Queue sidecars of a cluster with Knative (Config.QueueProxy).
const (
	QueueProxyGate    = "gate"    // podgate's gate (the default)
	QueueProxyKnative = "knative" // Knative's own queue-proxy
)

// DefaultDir is where a cluster keeps its files when no Dir is given on
// the command line: podgate/cluster in the user's cache directory (the
// system's temporary directory without one).
func DefaultDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "podgate", "cluster")
}

// PodsDir is where the node of the cluster in dir keeps its pods'
// service-account credentials: outside dir, in the system's temporary
// directory (named after dir), because a container whose securityContext
// runs it as another user than root (the webhook and the activator run
// as 65532) reads its own pod's files by their path, and dir — by default
// in root's home — is not searchable by other users.
func PodsDir(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(os.TempDir(), "podgate-cluster-"+hex.EncodeToString(sum[:6]), "pods")
}

// Files in the cluster's directory.
const (
	// KubeconfigFile is the admin's kubeconfig, for the host: server
	// https://127.0.0.1:PORT (the forward into the cluster).
	KubeconfigFile = "kubeconfig"
	// PidFile records the running cluster for `podgate cluster down`.
	PidFile = "cluster.pid"
	// controlPlaneDir holds the control plane's PKI, etcd's data and the
	// components' logs; podsDir the pods' service-account credentials.
	controlPlaneDir = "controlplane"
	podsDir         = "pods"
	// imageDir is the OCI image layout of podgate's image and the gate's
	// (and the static binaries built for them: podgate-gate, and podgate
	// when podgate itself is not static), imageCacheDir
	// the programs the node extracts from it, installDir the kustomize
	// overlay cluster up applies.
	imageDir      = "image"
	imageCacheDir = "image-cache"
	installDir    = "install"
	// knativeDir holds the Knative stack's kustomizations (--knative).
	knativeDir = "knative"
)

// ChildCommand is the hidden subcommand of podgate that runs the cluster
// process (Child): `podgate cluster child --config JSON`.
var ChildCommand = []string{"cluster", "child"}

// Config is a `podgate cluster up`.
type Config struct {
	// Dir holds the cluster's files (kubeconfig, pid file, the control
	// plane's PKI, data and logs). Required; created if absent.
	Dir string
	// PodCIDR is the pods' range (default DefaultPodCIDR): the node takes
	// its first address, the pods the following ones. It must not overlap
	// the Service range (controlplane.DefaultServiceCIDR).
	PodCIDR string
	// MaxPods is the node's pod capacity (0: the kubelet's default,
	// kube.DefaultMaxPods); the pod range's size bounds it too.
	MaxPods int
	// Listen is the host's loopback address of the API server (default
	// DefaultListen: a free port).
	Listen string
	// NodeName is the node's name (default DefaultNodeName).
	NodeName string
	// Images are `--image NAME=PATH` mappings for the node agent.
	Images []string
	// NoInstall leaves the cluster bare: no podgate image, no kube/deploy/base,
	// no front door.
	NoInstall bool
	// FrontDoor is the host's loopback address forwarded to the
	// activator's Service (default DefaultFrontDoor: a free port).
	FrontDoor string
	// Knative installs the Knative stack after podgate: kube-proxy and
	// CoreDNS (cluster networking), Knative Serving, and Traefik as its
	// ingress, forwarded from Ingress on the host.
	Knative bool
	// QueueProxy is the queue sidecar Knative puts in every revision's
	// pods: QueueProxyGate (default) or QueueProxyKnative.
	QueueProxy string
	// Ingress is the host's loopback address forwarded to Knative's
	// ingress (default DefaultIngress: a free port).
	Ingress string
	// InstallTimeout bounds the install, from the apply until the webhook
	// and the activator are ready (default install.DefaultTimeout).
	InstallTimeout time.Duration
	// Executable is the podgate binary started as the cluster process
	// (default os.Executable()).
	Executable string
	// Version is podgate's, reported by the node.
	Version string
	// Stdout receives the containers' output; Stderr the progress and
	// how to use the cluster. nil discards.
	Stdout, Stderr io.Writer
	// Ready, when set, is called once the node is Ready, the kubeconfig
	// written and podgate installed (unless NoInstall).
	Ready func(Info)
}

// Info describes a running cluster.
type Info struct {
	// Kubeconfig is the admin kubeconfig's path; Server its server URL.
	Kubeconfig, Server string
	// Pid is the cluster process's: the leader of the session every
	// process of the cluster runs in.
	Pid int
	// Kubectl is the path of the kubectl binary built with the control
	// plane.
	Kubectl string
	// FrontDoor is the front door's URL, http://127.0.0.1:PORT ("" for
	// a cluster without podgate installed); Image the reference of
	// podgate's image, by digest, that the install runs, and GateImage
	// the gate's, which the webhook injects.
	FrontDoor, Image, GateImage string
	// Ingress is Knative's ingress, http://127.0.0.1:PORT ("" without
	// --knative).
	Ingress string
}

// Check reports a configuration Up would refuse (a flag's value), before
// anything starts.
func (cfg Config) Check() error {
	_, err := cfg.withDefaults()
	return err
}

func (cfg Config) withDefaults() (Config, error) {
	if cfg.Dir == "" {
		return cfg, errors.New("--dir: required")
	}
	if cfg.MaxPods < 0 {
		return cfg, fmt.Errorf("--max-pods %d: want 1 or more (0: the default)", cfg.MaxPods)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return cfg, fmt.Errorf("--dir %q: %w", cfg.Dir, err)
	}
	cfg.Dir = dir
	if cfg.PodCIDR == "" {
		cfg.PodCIDR = DefaultPodCIDR
	}
	if err := checkPodCIDR(cfg.PodCIDR); err != nil {
		return cfg, err
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if err := checkListen("--listen", cfg.Listen); err != nil {
		return cfg, err
	}
	if cfg.FrontDoor == "" {
		cfg.FrontDoor = DefaultFrontDoor
	}
	if err := checkListen("--front-door", cfg.FrontDoor); err != nil {
		return cfg, err
	}
	if cfg.Ingress == "" {
		cfg.Ingress = DefaultIngress
	}
	if err := checkListen("--ingress", cfg.Ingress); err != nil {
		return cfg, err
	}
	switch cfg.QueueProxy {
	case "":
		cfg.QueueProxy = QueueProxyGate
	case QueueProxyGate, QueueProxyKnative:
	default:
		return cfg, fmt.Errorf("--queue-proxy %q: want %s or %s", cfg.QueueProxy, QueueProxyGate, QueueProxyKnative)
	}
	if cfg.Knative && cfg.NoInstall {
		return cfg, errors.New("--knative needs podgate installed: it cannot go with --no-install")
	}
	if cfg.InstallTimeout < 0 {
		return cfg, fmt.Errorf("--install-timeout %s: must not be negative", cfg.InstallTimeout)
	}
	if cfg.InstallTimeout == 0 {
		cfg.InstallTimeout = install.DefaultTimeout
	}
	if cfg.NodeName == "" {
		cfg.NodeName = DefaultNodeName
	}
	if errs := validation.IsDNS1123Subdomain(cfg.NodeName); len(errs) > 0 {
		return cfg, fmt.Errorf("--name %q: %s", cfg.NodeName, strings.Join(errs, "; "))
	}
	if err := images.CheckFlags(cfg.Images); err != nil {
		return cfg, err
	}
	if cfg.Executable == "" {
		if cfg.Executable, err = os.Executable(); err != nil {
			return cfg, fmt.Errorf("find podgate's own binary: %w", err)
		}
	}
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	return cfg, nil
}

// checkPodCIDR is podnet's rule, and clear of the Service range.
func checkPodCIDR(cidr string) error {
	p, err := netns.ParseCIDR(cidr)
	if err != nil {
		return fmt.Errorf("--pod-cidr: %w", err)
	}
	if svc := netip.MustParsePrefix(controlplane.DefaultServiceCIDR); p.Overlaps(svc) {
		return fmt.Errorf("--pod-cidr %s overlaps the Service range %s", cidr, svc)
	}
	return nil
}

// checkListen allows host loopback addresses only: the cluster's API
// server gives system:masters to whoever holds the kubeconfig, and
// neither it nor the front door is meant to be reached from another
// machine.
func checkListen(flag, listen string) error {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("%s %q: want 127.0.0.1:PORT: %w", flag, listen, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() || !ip.Is4() {
		return fmt.Errorf("%s %q: the cluster is forwarded to host loopback only: give an IPv4 loopback address, e.g. 127.0.0.1:%s", flag, listen, port)
	}
	return nil
}

// childConfig is what the host side tells the cluster process, as JSON
// in its --config flag (so its command line says which cluster it is).
type childConfig struct {
	Dir      string   `json:"dir"`
	PodCIDR  string   `json:"podCIDR"`
	MaxPods  int      `json:"maxPods,omitempty"`
	NodeName string   `json:"nodeName"`
	BinDir   string   `json:"binDir"`
	Images   []string `json:"images,omitempty"`
	Version  string   `json:"version,omitempty"`
	// Install: the node runs images of the layout in DIR/image, and the
	// host passed the front door's listener.
	Install bool `json:"install,omitempty"`
	// ClusterDNS is the node's --cluster-dns (CoreDNS's Service address
	// with Knative); the host passed the ingress's listener too.
	ClusterDNS string `json:"clusterDNS,omitempty"`
	// ReadyFd is the descriptor of the pipe the child reports on.
	ReadyFd int `json:"readyFd"`
}

// readyMessage is the child's one line on the ready pipe.
type readyMessage struct {
	// Kubeconfig is the admin's kubeconfig inside (server
	// https://127.0.0.1:INNER-PORT); the host rewrites the server.
	Kubeconfig string `json:"kubeconfig"`
	// APIServer is the API server's address inside the namespace, as
	// pods reach it (NODE-IP:PORT).
	APIServer string `json:"apiServer"`
}

func (c childConfig) args() ([]string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return append(append([]string{}, ChildCommand...), "--dir", c.Dir, "--config", string(b)), nil
}

// logger is the progress on w.
func logger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/podgate/podgate/node/containerconfig"
	"github.com/podgate/podgate/node/env"
	"github.com/podgate/podgate/node/events"
	"github.com/podgate/podgate/node/images"
	"github.com/podgate/podgate/node/logbuf"
	"github.com/podgate/podgate/node/loopnet"
	"github.com/podgate/podgate/node/poddns"
	"github.com/podgate/podgate/node/podnetwork"
	"github.com/podgate/podgate/node/podprobes"
	"github.com/podgate/podgate/node/podwatch"
	"github.com/podgate/podgate/node/podworkers"
	"github.com/podgate/podgate/node/proc"
	"github.com/podgate/podgate/node/seccontext"
	"github.com/podgate/podgate/node/volumes"
	"github.com/podgate/podgate/probe"
	"github.com/podgate/podgate/probe/prober"
)

// HostIP is status.hostIP on the loopback network: the host, as its pods
// reach it.
const HostIP = "127.0.0.1"

// DefaultResolvConf is the node's resolv.conf unless Options.ResolvConf
// says otherwise (the kubelet's --resolv-conf default).
const DefaultResolvConf = "/etc/resolv.conf"

// Options configure an Agent.
type Options struct {
	// Events receives the agent's events. Required.
	Events EventWriter
	// Pods is where pod status and the final removal of a pod go.
	// Required.
	Pods PodWriter
	// Source tells the agent of deletions of its pods. Required.
	Source PodSource
	// PodCIDR is the loopback range pod IPs come from (default
	// DefaultPodCIDR), for the default network.
	PodCIDR string
	// Network gives each pod its address and the place its processes run
	// in. Nil is the loopback network over PodCIDR: the pods share the
	// host's network, each binding an address of its own.
	Network PodNetwork
	// HostIP is every pod's status.hostIP (and the downward API's): the
	// node's address as its pods reach it. Default HostIP on the loopback
	// network; required with Network.
	HostIP netip.Addr
	// Images resolves images of containers without a command. Without
	// Entrypoints it is images.Default (the test app), its Store kept.
	Images images.Map
	// Clock times backoff, grace periods, probes and timestamps; nil is
	// the real clock.
	Clock clock.WithDelayedExecution
	// Output receives every container's output, each line prefixed
	// "pod/container | "; nil discards it (it is still kept for Logs).
	Output io.Writer
	// Logger reports events and the agent's own problems; nil discards.
	Logger *slog.Logger
	// NodeName is spec.nodeName and the events' source host (default: this
	// machine's host name).
	NodeName string
	// LogBytes is how much output is kept per container instance
	// (default logbuf.DefaultBytes).
	LogBytes int
	// EventLimit bounds the events kept (default events.DefaultLimit).
	EventLimit int
	// WorkDir is where containers without workingDir run (default:
	// podgate's working directory).
	WorkDir string
	// Getenv is where the containers' base environment (PATH, HOME, …)
	// comes from; nil is os.Getenv.
	Getenv func(string) string
	// Runner runs every probe; nil is probe.NewRunner().
	Runner *probe.Runner
	// NoGuardian skips the guardian process (see node/proc).
	NoGuardian bool
	// PodSetup, when set, gives each admitted pod extra environment and
	// work to finish before its containers start (see PodExtras).
	PodSetup PodSetupFunc
	// OnProbe, when set, hears every probe Update of every pod, an
	// Attempted one for each tick included (successes too), in order, on
	// the pod's prober goroutine, before the pod acts on it: `podgate run
	// --record`. It must not block.
	OnProbe func(namespace, pod string, u prober.Update)
	// Withdrawal, when set, holds every liveness and startup kill until
	// the pod's endpoint is withdrawn (see EndpointWithdrawal); nil kills
	// once the not-ready status is written.
	Withdrawal EndpointWithdrawal

	// ClusterDNS is the kubelet's --cluster-dns: the cluster DNS servers,
	// the nameservers of ClusterFirst pods. Empty: those pods get the
	// node's resolv.conf, with the kubelet's MissingClusterDNS warning.
	ClusterDNS []netip.Addr
	// ClusterDomain is the kubelet's --cluster-domain (default
	// poddns.DefaultClusterDomain): the search domains of ClusterFirst
	// pods and the domain of a pod's subdomain in its /etc/hosts.
	ClusterDomain string
	// ResolvConf is the kubelet's --resolv-conf, the node's resolv.conf
	// that Default pods get and ClusterFirst pods take search domains
	// from (default DefaultResolvConf).
	//
	// These three shape each pod's /etc/resolv.conf, and its /etc/hosts
	// is the kubelet's (package node/poddns): on a pod network (Network
	// set) with the node root, every container's process sees them at
	// those paths, bound in a mount namespace of its own. On the loopback
	// network the processes see this machine's files.
	ResolvConf string

	// Volumes reads the configMaps and secrets pods' volumes project (on
	// a cluster, the API server). On a pod network (Network set) with the
	// node root, each pod's volumes are set up as the kubelet sets them
	// up (package node/volumes) and bound at each container's mount paths
	// in its process's own mount namespace; nil there: a configMap or
	// secret volume fails its mount. On the loopback network, or when the
	// node is not root, volumes are not set up: a container's mount paths
	// are this machine's paths.
	Volumes VolumeGetter
	// VolumeResync is how often each pod's configMap, secret, downwardAPI
	// and projected volumes are written again from their objects (the
	// kubelet's sync; default DefaultVolumeResync).
	VolumeResync time.Duration
	// PodsDir is where the node writes each pod's own files on a pod
	// network with the node root (its DNS files and volumes), in a
	// directory named after the pod's UID, as the kubelet's
	// --root-dir/pods. Each pod's files are removed with the pod. Empty:
	// a directory the agent makes in the system's temporary directory
	// and removes at Shutdown. A node that is killed leaves what was in
	// it: a caller that names one removes it (node/kube does so at the
	// next start; the node's processes died with it).
	PodsDir string
}

// VolumeGetter reads the objects volumes project (Options.Volumes).
type VolumeGetter = volumes.Getter

// DefaultVolumeResync is Options.VolumeResync's default: the kubelet's
// sync frequency, a minute.
const DefaultVolumeResync = time.Minute

// Agent is the node agent. Create it with New: it runs every pod its
// PodSource reports bound to its node, until Shutdown.
type Agent struct {
	opts   Options
	clock  clock.WithDelayedExecution
	log    *slog.Logger
	net    PodNetwork
	sup    *proc.Supervisor
	runner *probe.Runner
	// bindProbe is runner.Bind; benchmarks count the attempts through it.
	bindProbe podprobes.BindFunc
	events    *events.Recorder
	out       *logbuf.Output
	owners    loopnet.Owners
	// resolver resolves containers as the kubelet does before creating
	// them: the base environment, the images, the default directory.
	resolver containerconfig.Resolver

	hostIP string // every pod's status.hostIP
	// self is who the node runs as: whom a container runs as unless its
	// securityContext says otherwise, and whether it can switch users.
	self seccontext.Node
	// loopback: the default network, whose pods share the host's ports
	// and have nothing to enter.
	loopback bool
	// podFiles: each pod gets its own /etc/resolv.conf and /etc/hosts
	// (see Options.ResolvConf) and volumes, in a directory in podsDir.
	podFiles bool
	podsDir  string
	// ownPodsDir: podsDir is the agent's own, removed at Shutdown.
	ownPodsDir bool

	stopWatch context.CancelFunc
	seen      *podwatch.Seen // owned by observe

	workers  podworkers.Set[*pod]
	shutdown sync.Once
}

// New prepares an Agent: the pod IP range and the process supervisor.
func New(opts Options) (*Agent, error) {
	if opts.Events == nil || opts.Pods == nil || opts.Source == nil {
		return nil, errors.New("runtime: Options.Events, Pods and Source are required")
	}
	network, err := podNetwork(&opts)
	if err != nil {
		return nil, err
	}
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	podFiles := opts.Network != nil && os.Geteuid() == 0
	if podFiles {
		// The kubelet fails every pod's start when it cannot read it;
		// said here once, before any pod.
		if _, err := os.Stat(opts.ResolvConf); err != nil {
			return nil, fmt.Errorf("runtime: the node's resolv.conf (Options.ResolvConf): %w", err)
		}
	}
	podsDir, ownPodsDir, err := makePodsDir(podFiles, opts.PodsDir)
	if err != nil {
		return nil, err
	}
	sup, err := proc.NewSupervisor(proc.Options{NoGuardian: opts.NoGuardian})
	if err != nil {
		removeOwn(podsDir, ownPodsDir)
		return nil, err
	}
	a := &Agent{
		opts:     opts,
		clock:    opts.Clock,
		log:      opts.Logger,
		net:      network,
		hostIP:   opts.HostIP.String(),
		self:     seccontext.Node{UID: uint32(os.Geteuid()), GID: uint32(os.Getegid())},
		loopback: opts.Network == nil,
		podFiles: podFiles,
		podsDir:  podsDir, ownPodsDir: ownPodsDir,
		sup:       sup,
		runner:    opts.Runner,
		bindProbe: opts.Runner.Bind,
		events:    events.New(opts.Events, opts.Clock, opts.NodeName, opts.EventLimit, opts.Logger),
		out:       logbuf.NewOutput(opts.Output),
		resolver:  containerconfig.Resolver{Base: env.Base(opts.Getenv), Images: opts.Images, WorkDir: opts.WorkDir},
		seen:      podwatch.New(),
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.stopWatch = cancel
	if err := opts.Source.WatchPods(ctx, opts.NodeName, a.observe); err != nil {
		cancel()
		sup.Close()
		removeOwn(podsDir, ownPodsDir)
		return nil, fmt.Errorf("runtime: %w", err)
	}
	return a, nil
}

// setDefaults fills in the options left empty (see Options).
func (o *Options) setDefaults() error {
	var err error
	if o.Images, err = o.Images.OrDefault(); err != nil {
		return err
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.NodeName == "" {
		o.NodeName = defaultNodeName()
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.WorkDir == "" {
		if wd, err := os.Getwd(); err == nil {
			o.WorkDir = wd
		}
	}
	if o.Runner == nil {
		o.Runner = probe.NewRunner()
	}
	if o.ClusterDomain == "" {
		o.ClusterDomain = poddns.DefaultClusterDomain
	}
	if o.VolumeResync <= 0 {
		o.VolumeResync = DefaultVolumeResync
	}
	if o.ResolvConf == "" {
		o.ResolvConf = DefaultResolvConf
	}
	return nil
}

// podNetwork is Options.Network, or the loopback network over PodCIDR;
// it fills in the defaults of PodCIDR and HostIP.
func podNetwork(opts *Options) (PodNetwork, error) {
	if opts.Network != nil {
		switch {
		case opts.PodCIDR != "":
			return nil, errors.New("runtime: Options.PodCIDR is the loopback network's: with Options.Network the network has its own range")
		case !opts.HostIP.IsValid():
			return nil, errors.New("runtime: Options.HostIP is required with Options.Network: the node's address as its pods reach it")
		}
		return opts.Network, nil
	}
	if opts.PodCIDR == "" {
		opts.PodCIDR = DefaultPodCIDR
	}
	if !opts.HostIP.IsValid() {
		opts.HostIP = netip.MustParseAddr(HostIP)
	}
	n, err := loopnet.New(opts.PodCIDR)
	if err != nil {
		return nil, err
	}
	return podnetwork.Loopback(n), nil
}

func defaultNodeName() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	// A node name is a DNS subdomain: lower case, no trailing dot.
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// CheckPod reports what would keep pod's containers from starting on
// this node (a container without a command whose image has no local
// entrypoint, an environment source that exists only in a cluster), each
// error at its field under specPath, where the caller found pod.Spec. It
// resolves the containers as admit would, for a stand-in of pod that is
// never run, so that a caller can refuse pods before any of them starts.
func (a *Agent) CheckPod(pod *corev1.Pod, specPath *field.Path) field.ErrorList {
	return a.resolver.Check(pod, specPath, a.opts.NodeName, a.hostIP)
}

// Capacity is how many pods the pod network has room for, and its range.
func (a *Agent) Capacity() (pods int, cidr netip.Prefix) { return a.net.Capacity() }

// Shutdown stops every pod gracefully, as a node drain would: preStop
// hooks, SIGTERM, SIGKILL at each pod's grace period, sidecars last. When
// ctx ends first, whatever still runs is killed at once. It returns once
// every process has exited; the agent cannot be started again.
func (a *Agent) Shutdown(ctx context.Context) error {
	var err error
	a.shutdown.Do(func() {
		// No pod starts any more (observe): Drain waits for all.
		err = a.workers.Drain(ctx)
		a.stopWatch()
		a.sup.Close()
		removeOwn(a.podsDir, a.ownPodsDir)
	})
	return err
}

// pod is the worker of a pod the agent runs, or nil.
func (a *Agent) pod(namespace, name string) *pod {
	return a.workers.Get(podworkers.Key{Namespace: namespace, Name: name})
}

// NodeName is the node the agent runs pods of.
func (a *Agent) NodeName() string { return a.opts.NodeName }

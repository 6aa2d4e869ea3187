// Package controlplane runs a real Kubernetes control plane — etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler, the binaries
// of internal/k8sbin — as child processes, for podgate's Kubernetes-mode
// tests, benchmarks and, later, a node agent's cluster.
//
// Everything it needs is made in its directory: a PKI (a CA, the API
// server's serving certificate, the service-account key pair, client
// certificates and a kubeconfig per identity), etcd's data and one log file
// per component. The API server authorizes with Node,RBAC and admits with
// NodeRestriction, so a node's credential (NodeKubeconfig) is limited to
// its own Node, Lease and pods, as a kubelet's is; the one permission
// podgate's node needs beyond a kubelet's, reading EndpointSlices, is
// granted to every node by the ClusterRole NodeEndpointSlicesRole, made
// once the API server is ready.
//
// The API server calls nodes' kubelet APIs (logs, exec, port-forward) at
// their InternalIP, verifying their serving certificates against the
// cluster's CA (KubeletServing issues one) and showing a client
// certificate of its own, user KubeletClientUser, bound to the bootstrap
// ClusterRole system:kubelet-api-admin (KubeletAPIBinding).
//
// Each component leads its own process group and gets SIGKILL when podgate
// (or the test) dies; Stop, or the end of Start's context, stops them in
// order: scheduler, controller manager, API server, etcd last (an API
// server whose etcd is gone hangs in its graceful shutdown).
//
// Pod CIDRs belong to the node: the controller manager does not allocate
// them (no --allocate-node-cidrs); a node sets spec.podCIDR when it
// registers, from the range its pods take addresses from.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/podgate/podgate/internal/k8sbin"
	"github.com/podgate/podgate/node/proc"
)

// Defaults of Options.
const (
	DefaultServiceCIDR  = "10.96.0.0/16"
	DefaultReadyTimeout = 3 * time.Minute
	DefaultStopTimeout  = 20 * time.Second
)

// startAttempts bounds the starts tried when a port was taken.
const startAttempts = 3

// Component names, as the log files and Pids name them.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
)

// Options configure a control plane. Only Dir is required.
type Options struct {
	// Dir holds everything the control plane makes: certificates and
	// kubeconfigs, etcd's data, the components' logs. It is created if
	// absent.
	Dir string
	// BinDir holds the binaries; empty means internal/k8sbin.Dir (built
	// on first use).
	BinDir string
	// BindAddress is where the API server listens (default 127.0.0.1);
	// its port is always a free one. etcd, the controller manager and
	// the scheduler listen on 127.0.0.1.
	BindAddress string
	// AdvertiseAddress is the API server address published as the
	// `kubernetes` Service's endpoint (default: BindAddress, or 127.0.0.1
	// when that is unspecified). A loopback address turns the endpoint
	// reconciler off: the API server refuses to advertise one.
	AdvertiseAddress string
	// ServiceCIDR is the ClusterIP range (default DefaultServiceCIDR).
	ServiceCIDR string
	// ExtraArgs are appended to a component's command line, by component
	// name (e.g. feature gates).
	ExtraArgs map[string][]string
	// Fsync keeps etcd's fsyncs; by default they are off, for a control
	// plane that lives as long as a test.
	Fsync bool
	// ReadyTimeout bounds the wait for readiness (default
	// DefaultReadyTimeout); StopTimeout a component's graceful stop before
	// it is killed (default DefaultStopTimeout).
	ReadyTimeout, StopTimeout time.Duration
	// Logger reports progress; nil discards.
	Logger *slog.Logger
}

// Timings are how long the start took, from Start's call.
type Timings struct {
	// APIServerReady: /readyz answered ok.
	APIServerReady time.Duration
	// ControllersHealthy: the controller manager and the scheduler
	// answered /healthz ok.
	ControllersHealthy time.Duration
	// Ready: the `default` ServiceAccount exists in namespace default, so
	// pods can be created; Start returns.
	Ready time.Duration
}

// ControlPlane is a running control plane. Create it with Start.
type ControlPlane struct {
	opts    Options
	log     *slog.Logger
	bins    string
	url     string // https://HOST:PORT of the API server
	ports   ports
	files   files
	pki     *pki
	sup     *proc.Supervisor
	timings Timings

	mu    sync.Mutex
	comps []*component // in start order

	stopOnce sync.Once
	stopErr  error
	stopped  chan struct{}
}

// Start makes the PKI, starts the components and waits until they are
// ready (see Timings). Everything stops when ctx ends or Stop is called;
// a failed start leaves nothing running, and its error names the
// component that failed with the end of its log.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	begin := time.Now()
	var c *ControlPlane
	for attempt := 1; ; attempt++ {
		var err error
		if c, err = newControlPlane(opts); err != nil {
			return nil, err
		}
		err = c.start(ctx, begin)
		if err == nil {
			break
		}
		err = errors.Join(err, c.Stop())
		// The free ports are released before the components bind them:
		// another process may take one in between. Rare; a new set is
		// tried (on a fresh etcd).
		if attempt == startAttempts || !strings.Contains(err.Error(), "address already in use") {
			return nil, err
		}
		c.log.Warn("a port was taken meanwhile; starting again on other ports", "attempt", attempt, "err", err)
		if err := os.RemoveAll(filepath.Join(c.opts.Dir, "etcd")); err != nil {
			return nil, fmt.Errorf("controlplane: %w", err)
		}
	}
	go func() {
		select {
		case <-ctx.Done():
			_ = c.Stop()
		case <-c.stopped:
		}
	}()
	return c, nil
}

func newControlPlane(opts Options) (*ControlPlane, error) {
	if opts.Dir == "" {
		return nil, errors.New("controlplane: Options.Dir is required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("controlplane: dir: %w", err)
	}
	opts.Dir = dir
	if opts.BindAddress == "" {
		opts.BindAddress = "127.0.0.1"
	}
	bind, err := netip.ParseAddr(opts.BindAddress)
	if err != nil {
		return nil, fmt.Errorf("controlplane: bind address %q: %w", opts.BindAddress, err)
	}
	if opts.AdvertiseAddress == "" {
		opts.AdvertiseAddress = opts.BindAddress
		if bind.IsUnspecified() {
			opts.AdvertiseAddress = "127.0.0.1"
		}
	}
	if _, err := netip.ParseAddr(opts.AdvertiseAddress); err != nil {
		return nil, fmt.Errorf("controlplane: advertise address %q: %w", opts.AdvertiseAddress, err)
	}
	if opts.ServiceCIDR == "" {
		opts.ServiceCIDR = DefaultServiceCIDR
	}
	if _, err := netip.ParsePrefix(opts.ServiceCIDR); err != nil {
		return nil, fmt.Errorf("controlplane: service CIDR %q: %w", opts.ServiceCIDR, err)
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	bins := opts.BinDir
	if bins == "" {
		if bins, err = k8sbin.Dir(); err != nil {
			return nil, fmt.Errorf("controlplane: %w", err)
		}
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	return &ControlPlane{opts: opts, log: opts.Logger, bins: bins, stopped: make(chan struct{})}, nil
}

// start runs the steps in order; on error the caller stops what started.
func (c *ControlPlane) start(ctx context.Context, begin time.Time) error {
	if err := c.choosePorts(); err != nil {
		return err
	}
	if err := c.writePKI(); err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	sup, err := proc.NewSupervisor(proc.Options{})
	if err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	c.sup = sup
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadyTimeout)
	defer cancel()
	// The API server waits for etcd itself; the controller manager gives
	// up on an API server that takes more than a few seconds to turn
	// healthy, so it and the scheduler start once the API server is ready.
	for _, name := range []string{Etcd, KubeAPIServer} {
		if err := c.launch(name); err != nil {
			return err
		}
	}
	if err := c.waitAPIServer(ctx); err != nil {
		return err
	}
	c.timings.APIServerReady = time.Since(begin)
	if err := c.installNodeRBAC(ctx); err != nil {
		return err
	}
	for _, name := range []string{KubeControllerManager, KubeScheduler} {
		if err := c.launch(name); err != nil {
			return err
		}
	}
	if err := c.waitControllers(ctx); err != nil {
		return err
	}
	c.timings.ControllersHealthy = time.Since(begin)
	if err := c.waitDefaultServiceAccount(ctx); err != nil {
		return err
	}
	c.timings.Ready = time.Since(begin)
	c.log.Info("control plane ready", "url", c.url, "dir", c.opts.Dir, "took", c.timings.Ready.Round(time.Millisecond))
	return nil
}

// Stop stops the components, scheduler first and etcd last, each
// gracefully (SIGTERM) and killed after Options.StopTimeout, and returns
// once none runs. It is safe to call more than once.
func (c *ControlPlane) Stop() error {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		comps := c.comps
		c.comps = nil
		c.mu.Unlock()
		var errs []error
		for i := len(comps) - 1; i >= 0; i-- {
			errs = append(errs, comps[i].stop(c.opts.StopTimeout))
		}
		if c.sup != nil {
			c.sup.Close()
		}
		c.stopErr = errors.Join(errs...)
		close(c.stopped)
	})
	<-c.stopped
	return c.stopErr
}

// Done is closed once the control plane has stopped.
func (c *ControlPlane) Done() <-chan struct{} { return c.stopped }

// URL is the API server's https URL.
func (c *ControlPlane) URL() string { return c.url }

// Dir is where the control plane keeps its files.
func (c *ControlPlane) Dir() string { return c.opts.Dir }

// AdminKubeconfig is the path of a kubeconfig for a system:masters user.
func (c *ControlPlane) AdminKubeconfig() string { return c.files.adminKubeconfig }

// AdminConfig is a client-go config for a system:masters user.
func (c *ControlPlane) AdminConfig() *rest.Config { return c.restConfig(c.pki.admin) }

// LogFile is the path of a component's log.
func (c *ControlPlane) LogFile(component string) string {
	return filepath.Join(c.opts.Dir, component+".log")
}

// Timings says how long the start took.
func (c *ControlPlane) Timings() Timings { return c.timings }

// ServiceAccountIssuer is the issuer of the service-account tokens.
func (c *ControlPlane) ServiceAccountIssuer() string { return serviceAccountIssuer }

// Pids are the components' process ids (each also its process group),
// by component name, for those started and not yet stopped.
func (c *ControlPlane) Pids() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for _, comp := range c.comps {
		out[comp.name] = comp.proc.Pid
	}
	return out
}

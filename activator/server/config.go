package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/record"
)

// Defaults of Config.
const (
	// DefaultListen is the traffic port; the Service in
	// kube/deploy/base/activator maps port 80 to it.
	DefaultListen = ":8080"
	// DefaultMetricsListen is Knative's activator's metrics port (the
	// flag's default: an empty Config.MetricsListen serves no metrics).
	DefaultMetricsListen = ":9090"
	// DefaultIdleTimeout is how long a Service's target lives without a
	// request: its health checks stop with it.
	DefaultIdleTimeout = 5 * time.Minute
	// DefaultShutdownTimeout bounds the wait for requests in flight and
	// held once a stop began; it fits in the default 30 s grace period
	// after kube/deploy/base's preStop sleep of 5 s.
	DefaultShutdownTimeout = 20 * time.Second
)

// Config is an activator: `podgate activator` on a cluster, or `podgate
// run`'s front door. Only Client or Rest is required.
type Config struct {
	// Client reads EndpointSlices and Pods; when nil, one is made from
	// Rest, which reaches the API server (see internal/kubeconfig).
	Client kubernetes.Interface
	Rest   *rest.Config
	// Listen is the traffic address (default DefaultListen);
	// MetricsListen, when set, serves /metrics, /healthz and /readyz.
	// Port 0 takes a free one (Server.Addr and Server.MetricsAddr say
	// which).
	Listen, MetricsListen string
	// Listener and MetricsListener, when set, are the traffic and metrics
	// listeners, opened by the caller (Listen and MetricsListen are then
	// unused).
	Listener, MetricsListener net.Listener
	// Domain ends every host: NAME.NAMESPACE.DOMAIN (default
	// activator.DefaultDomain, Knative's example.com).
	Domain string
	// Namespace limits the activator to one namespace (default: every
	// namespace; a Role in that namespace then suffices).
	Namespace string
	// GatePort is the port of each pod's gate (default contract.GatePort,
	// queue-proxy's 8012): the activator sends requests and health checks
	// there, whatever the EndpointSlices' ports.
	GatePort int32
	// RequestTimeout bounds a request until its response starts, the wait
	// for a ready pod included (default activator.DefaultRequestTimeout,
	// 300 s); then 504.
	RequestTimeout time.Duration
	// QueueDepth is how many requests one Service may hold (default
	// activator.DefaultQueueDepth); beyond it 503.
	QueueDepth int
	// ProbeInterval and ProbeTimeout time the gates' health checks
	// (defaults activator.DefaultProbeInterval, DefaultProbeTimeout).
	ProbeInterval, ProbeTimeout time.Duration
	// IdleTimeout closes a Service's target that has had no request for
	// that long (default DefaultIdleTimeout).
	IdleTimeout time.Duration
	// ShutdownTimeout bounds the wait for requests once ctx ends
	// (default DefaultShutdownTimeout); held ones then get 503.
	ShutdownTimeout time.Duration
	// Dial connects to the gates (default a net.Dialer): see
	// activator.Config.Dial.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Clock drives the idle timeout (default the real clock).
	Clock clock.WithTicker
	// Logger reports targets opening and closing, pods and problems; nil
	// discards.
	Logger *slog.Logger

	// Routes, when set, are the only Services served, each with its
	// target from the start, never closed for idleness: `podgate run`
	// knows its workloads up front. Without Routes, any Service with
	// EndpointSlices is served, its target made on its first request.
	Routes []Route
	// ServicePorts each serve one route on a port of its own, whatever
	// the Host (`podgate run --service-port`), on Listen's host.
	ServicePorts []ServicePort
	// OnlyRouter says that this activator is the only router to the pods
	// (`podgate run`; on a cluster `podgate activator --only-router`, which
	// `podgate cluster up` without --knative runs: one replica, no
	// kube-proxy, no ingress): their gates are told when it sends them
	// nothing any more, rather than draining for their quiet period. On a
	// cluster also the gates of terminating pods no target follows, and,
	// as it stops, the gates that drain (unrouted.go).
	OnlyRouter bool
	// Recorder, when set, hears every target's routing decisions and
	// requests (`podgate run --record`).
	Recorder record.Sink
	// OnChange is told when the number of pods taking traffic of a route
	// changed (a Knative Service's status follows it).
	OnChange func(namespace, name string)
	// ServiceEvents records a Warning Event (reason NoRoute) on a Service
	// the activator cannot route, at most one a minute per Service and
	// reason; Client must then be allowed to create and patch Events
	// (`podgate activator` on a cluster; `podgate run`'s API has none).
	ServiceEvents bool
	// Announce, when set, gets a line per route once it takes traffic,
	// after PrintCurls.
	Announce io.Writer
}

// Route is a Service served from the start (Config.Routes).
type Route struct {
	// Namespace and Name make the host: NAME.NAMESPACE.DOMAIN.
	Namespace, Name string
	// Service is the kubernetes.io/service-name of its EndpointSlices
	// (default Name): a Knative Service's pods belong to its revision.
	Service string
	// GatePort is its pods' gate port (default Config.GatePort).
	GatePort int32
	// ContainerConcurrency bounds the requests per pod (0: no bound);
	// RequestTimeout replaces Config.RequestTimeout when set.
	ContainerConcurrency int
	RequestTimeout       time.Duration
	// Label names the route in messages (e.g. Deployment/web).
	Label string
}

// Check reports the values that are wrong as written, whatever the
// cluster holds, naming the field.
func (c Config) Check() error {
	var errs []error
	for _, a := range []struct{ field, value string }{{"listen", c.Listen}, {"metricsListen", c.MetricsListen}} {
		if a.value == "" {
			continue
		}
		if _, port, err := net.SplitHostPort(a.value); err != nil {
			errs = append(errs, fmt.Errorf("%s: Invalid value: %q: %v (want HOST:PORT or :PORT)", a.field, a.value, err))
		} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			errs = append(errs, fmt.Errorf("%s: Invalid value: %q: port must be a number from 0 to 65535", a.field, a.value))
		}
	}
	if c.Domain != "" {
		if msgs := validation.IsDNS1123Subdomain(strings.TrimSuffix(c.Domain, ".")); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("domain: Invalid value: %q: %s", c.Domain, strings.Join(msgs, "; ")))
		}
	}
	if c.Namespace != "" {
		if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("namespace: Invalid value: %q: %s", c.Namespace, strings.Join(msgs, "; ")))
		}
	}
	if c.GatePort < 0 || c.GatePort > 65535 {
		errs = append(errs, fmt.Errorf("gatePort: Invalid value: %d: must be from 1 to 65535", c.GatePort))
	}
	if c.QueueDepth < 0 {
		errs = append(errs, fmt.Errorf("queueDepth: Invalid value: %d: must not be negative", c.QueueDepth))
	}
	for _, d := range []struct {
		field string
		value time.Duration
	}{
		{"requestTimeout", c.RequestTimeout}, {"probeInterval", c.ProbeInterval}, {"probeTimeout", c.ProbeTimeout},
		{"idleTimeout", c.IdleTimeout}, {"shutdownTimeout", c.ShutdownTimeout},
	} {
		if d.value < 0 {
			errs = append(errs, fmt.Errorf("%s: Invalid value: %s: must not be negative", d.field, d.value))
		}
	}
	hosts := map[string]bool{}
	for _, r := range c.Routes {
		key := strings.ToLower(r.Namespace + "/" + r.Name)
		if hosts[key] {
			errs = append(errs, fmt.Errorf("routes: Duplicate value: %s/%s: one host, two routes", r.Namespace, r.Name))
		}
		hosts[key] = true
	}
	for _, p := range c.ServicePorts {
		if !hosts[strings.ToLower(p.Namespace+"/"+p.Name)] {
			errs = append(errs, fmt.Errorf("--service-port %s: no route %s/%s", p.Raw, p.Namespace, p.Name))
		}
	}
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.Listen, DefaultListen)
	def(&c.Domain, activator.DefaultDomain)
	c.Domain = strings.ToLower(strings.TrimSuffix(c.Domain, "."))
	if c.GatePort == 0 {
		c.GatePort = contract.GatePort
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// targetConfig is what every Service's target is made with; a route
// may narrow it.
func (c *Config) targetConfig(m activator.Metrics, r *Route) activator.Config {
	cfg := activator.Config{
		QueueDepth:     c.QueueDepth,
		RequestTimeout: c.RequestTimeout,
		ProbeInterval:  c.ProbeInterval,
		ProbeTimeout:   c.ProbeTimeout,
		Dial:           c.Dial,
		Logger:         c.Logger,
		Metrics:        m,
		Recorder:       c.Recorder,
		// On a cluster a pod outlives an idle target and the activator.
		UnroutedIfDraining: len(c.Routes) == 0,
	}
	if r != nil {
		cfg.ContainerConcurrency = r.ContainerConcurrency
		if r.RequestTimeout > 0 {
			cfg.RequestTimeout = r.RequestTimeout
		}
	}
	return cfg
}

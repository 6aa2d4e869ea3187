// Package frontdoor is `podgate run`'s front door: one listener that
// routes each request by its Host (NAME.NAMESPACE.DOMAIN) to an activator
// target per workload, fed from the EndpointSlices and pods of the store,
// plus a listener per --service-port and the metrics server.
package frontdoor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/activator/kubebackends"
	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/internal/loopback"
	"github.com/podgate/podgate/record"
)

// DefaultListen is the front door's address: Knative's ingress answers on
// port 80; locally 8080 needs no privileges.
const DefaultListen = contract.FrontDoorAddr

// drainLimit bounds how long requests in flight through the front door
// may take to finish once the pods are gone.
const drainLimit = 5 * time.Second

// Door is `podgate run`'s single listener: it routes each request by
// its Host to the activator target of one workload.
type Door struct {
	ln     net.Listener
	router *activator.Router
	srv    *http.Server
	// listeners are every server the front door runs: the router on ln
	// first, then one per --service-port.
	listeners []listener
	targets   []*activator.Target
	routes    []route
	// byWorkload finds a workload's target: NAMESPACE/NAME.
	byWorkload map[string]*activator.Target

	stopFeeds context.CancelFunc
	feeds     sync.WaitGroup
	served    chan error

	shutdownOnce sync.Once
	shutdownDone chan error

	stderr io.Writer
	// announceMu guards the routes' announced flags and curlsPrinted: a
	// ready line comes after the curl lines, once.
	announceMu   sync.Mutex
	curlsPrinted bool
}

type listener struct {
	ln  net.Listener
	srv *http.Server
}

type route struct {
	workload string // Kind/name, for messages
	name     string // NAME.NAMESPACE, for the ready line
	host     string
	// port, when set, is the workload's own listener (--service-port).
	port net.Listener
	// announced: the ready line was printed.
	announced bool
}

// ServingPods is controllers.ServingCounter: the pods of a workload the
// activator sends requests to, so that service status follows traffic.
func (f *Door) ServingPods(namespace, name string) (int, bool) {
	t, ok := f.byWorkload[namespace+"/"+name]
	if !ok {
		return 0, false
	}
	return t.Status().Ready, true
}

// Listen opens addr, which must be on loopback: the front door
// has no authentication, like the control API.
func Listen(addr string) (net.Listener, error) {
	checked, err := loopback.Check(addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %w (the front door has no authentication; e.g. %s)", addr, err, DefaultListen)
	}
	ln, err := net.Listen("tcp", checked)
	if err != nil {
		return nil, fmt.Errorf("front door: %w", err)
	}
	return ln, nil
}

// serviceName is the kubernetes.io/service-name of a workload's
// EndpointSlice, as the runtime writes it: the revision for a Knative
// Service (its pods belong to the revision, not the service), the
// workload's own name otherwise.
func serviceName(w *workload.Workload) string {
	if w.Knative != nil && w.Knative.RevisionName != "" {
		return w.Knative.RevisionName
	}
	return w.Name
}

// gatePort is the port the injected gate serves traffic and health checks
// on, as declared on the gate container.
func gatePort(w *workload.Workload) int32 {
	_, port := contract.GateTrafficPort(w.Container(contract.GateContainerName))
	return port
}

// Config is what New builds from.
type Config struct {
	// Client reads EndpointSlices and Pods (the control API's).
	Client    kubernetes.Interface
	Workloads []*workload.Workload
	Domain    string
	// ServicePorts are the --service-port flags, not yet checked against
	// the workloads.
	ServicePorts []ServicePort
	// ProbeInterval and ProbeTimeout time the gates' health checks.
	ProbeInterval, ProbeTimeout time.Duration
	// OnChange is told when the number of pods taking traffic of a
	// workload changed (the Knative Service status follows it).
	OnChange func(namespace, name string)
	// Metrics, when set, receives every target's measurements.
	Metrics activator.Metrics
	// Recorder, when set, hears every target's routing decisions and
	// requests (`podgate run --record`).
	Recorder record.Sink
	Logger   *slog.Logger
	Stderr   io.Writer
}

// New makes one activator target per workload, fed from the
// control API's EndpointSlices and Pods, and routes NAME.NAMESPACE.DOMAIN to it,
// plus a listener of its own per --service-port. Workloads without the
// gate get no route: the activator talks only to gates (it health-checks
// them the way Knative's activator checks queue-proxy). It does not serve
// until start.
func New(ln net.Listener, c Config) (*Door, error) {
	f := &Door{
		ln:           ln,
		router:       activator.NewRouter(c.Domain),
		served:       make(chan error, 1),
		shutdownDone: make(chan error, 1),
		byWorkload:   map[string]*activator.Target{},
		stderr:       c.Stderr,
	}
	var routed []*workload.Workload
	for _, w := range c.Workloads {
		if !w.IsInjected() {
			fmt.Fprintf(c.Stderr, "podgate: no front door route for %s: it runs without the gate (--no-gate)\n", w.ID())
			continue
		}
		routed = append(routed, w)
	}
	portOf, err := CheckRoutes(routed, c.Domain, c.ServicePorts)
	if err != nil {
		return nil, err
	}
	for _, w := range routed {
		cfg := activator.Config{Logger: c.Logger, ProbeInterval: c.ProbeInterval, ProbeTimeout: c.ProbeTimeout, Metrics: c.Metrics, Recorder: c.Recorder}
		if k := w.Knative; k != nil {
			cfg.ContainerConcurrency = int(k.ContainerConcurrency)
			if k.TimeoutSeconds > 0 {
				cfg.RequestTimeout = time.Duration(k.TimeoutSeconds) * time.Second
			}
		}
		t, err := activator.NewTarget(w.Namespace+"/"+w.Name, cfg)
		if err != nil {
			f.closeTargets()
			return nil, fmt.Errorf("%s: %w", w.ID(), err)
		}
		f.targets = append(f.targets, t)
		f.byWorkload[w.Namespace+"/"+w.Name] = t
		f.router.Set(w.Namespace, w.Name, t)
		f.routes = append(f.routes, route{
			workload: w.ID(), name: w.Name + "." + w.Namespace, host: f.router.Host(w.Namespace, w.Name),
		})
	}
	errorLog := slog.NewLogLogger(c.Logger.Handler(), slog.LevelWarn)
	f.srv = &http.Server{Handler: f.router, ReadHeaderTimeout: 10 * time.Second, ErrorLog: errorLog}
	f.listeners = []listener{{ln: ln, srv: f.srv}}
	if err := f.listenServicePorts(c.ServicePorts, portOf, errorLog); err != nil {
		f.closeTargets()
		f.closeServicePorts()
		return nil, err
	}

	if err := f.startFeeds(routed, c); err != nil {
		f.closeTargets()
		f.closeServicePorts()
		return nil, err
	}
	return f, nil
}

// startFeeds follows the routed workloads' EndpointSlices and pods into
// their targets, through one feed (one informer pair) for them all. It is
// the only router to these pods, so each target tells a gate when it
// sends it nothing more. Feeds start before the pods: a target then sees
// every pod from its first endpoint on.
func (f *Door) startFeeds(routed []*workload.Workload, c Config) error {
	feed, err := kubebackends.NewFeed(c.Client, kubebackends.Options{OnlyRouter: true})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.stopFeeds = cancel
	f.feeds.Go(func() { feed.Run(ctx) })
	for i, w := range routed {
		src := feed.Backends(w.Namespace, serviceName(w), gatePort(w))
		t := f.targets[i]
		f.feeds.Add(2)
		go func() {
			defer f.feeds.Done()
			// Target.Run, with a look after each snapshot: an endpoint
			// that turns ready may not change the ready count (the gate's
			// answer alone made the pod usable), yet it is what the ready
			// line waits for.
			for pods := range src.Pods(ctx) {
				t.Update(pods)
				f.announceReady(i)
			}
		}()
		go func() {
			defer f.feeds.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.Changed():
					f.announceReady(i)
					if c.OnChange != nil {
						c.OnChange(w.Namespace, w.Name)
					}
				}
			}
		}()
	}
	return nil
}

// announceReady prints, once per route and after the curl lines, that the
// workload takes traffic: a pod is usable by the front door and its
// endpoint is ready (so the pod is Ready too, whatever the fast path let
// through earlier).
func (f *Door) announceReady(i int) {
	f.announceMu.Lock()
	defer f.announceMu.Unlock()
	r := &f.routes[i]
	if !f.curlsPrinted || r.announced {
		return
	}
	ready, pods := 0, 0
	for _, b := range f.targets[i].Status().Backends {
		if b.Terminating {
			continue
		}
		pods++
		if b.Usable && b.EndpointReady {
			ready++
		}
	}
	if ready == 0 {
		return
	}
	r.announced = true
	fmt.Fprintf(f.stderr, "podgate: %s is ready (%d/%d pods): curl -H 'Host: %s' http://%s/\n", r.name, ready, pods, r.host, f.ln.Addr())
}

// start serves the router and the service ports.
func (f *Door) Start() {
	for _, l := range f.listeners {
		go func() {
			err := l.srv.Serve(l.ln)
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			}
			if err != nil {
				select {
				case f.served <- err:
				default:
				}
			}
		}()
	}
}

// printCurls prints one ready-to-paste request per route and per service
// port. Requests sent before a pod is ready are held until one is; the
// ready lines (announceReady) follow.
func (f *Door) PrintCurls(w io.Writer) {
	addr := f.ln.Addr().String()
	fmt.Fprintf(w, "podgate: front door on http://%s (routes by Host: NAME.NAMESPACE.%s; holds requests until a pod is ready)\n", addr, f.domain())
	for _, r := range f.routes {
		fmt.Fprintf(w, "podgate: curl -H 'Host: %s' http://%s/    # %s\n", r.host, addr, r.workload)
	}
	for _, r := range f.routes {
		if r.port != nil {
			fmt.Fprintf(w, "podgate: curl http://%s/    # %s on its own port (--service-port)\n", r.port.Addr(), r.workload)
		}
	}
	f.announceMu.Lock()
	f.curlsPrinted = true
	f.announceMu.Unlock()
	for i := range f.routes {
		f.announceReady(i)
	}
}

func (f *Door) domain() string {
	// Host of an empty name and namespace is "..DOMAIN".
	return f.router.Host("", "")[2:]
}

// beginShutdown stops taking connections and answers held requests (they
// could only wait for pods that are stopping) with 503. Requests in flight
// go on while the pods drain.
func (f *Door) BeginShutdown() {
	f.shutdownOnce.Do(func() {
		f.closeTargets()
		go func() {
			// No deadline here: finish bounds the wait once the pods,
			// which the requests in flight are talking to, have stopped.
			errs := make(chan error, len(f.listeners))
			for _, l := range f.listeners {
				go func() { errs <- l.srv.Shutdown(context.Background()) }()
			}
			var first error
			for range f.listeners {
				if err := <-errs; err != nil && first == nil {
					first = err
				}
			}
			f.shutdownDone <- first
		}()
	})
}

// finish waits, at most drainLimit, for requests still in flight,
// then cuts them, and stops the endpoint feeds.
func (f *Door) Finish() error {
	f.BeginShutdown()
	var err error
	select {
	case err = <-f.shutdownDone:
	case <-time.After(drainLimit):
		for _, l := range f.listeners {
			if e := l.srv.Close(); err == nil {
				err = e
			}
		}
		if e := <-f.shutdownDone; err == nil && !errors.Is(e, http.ErrServerClosed) {
			err = e
		}
	}
	// Shutdown closes only a listener that Serve took.
	for _, l := range f.listeners {
		_ = l.ln.Close()
	}
	f.stopFeeds()
	f.feeds.Wait()
	return err
}

func (f *Door) closeTargets() {
	for _, t := range f.targets {
		t.Close()
	}
}

// Served reports a listener that stopped serving with an error.
func (f *Door) Served() <-chan error { return f.served }

// Addr is the front door's address.
func (f *Door) Addr() net.Addr { return f.ln.Addr() }

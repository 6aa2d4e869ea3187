// Package local is `podgate run`: it checks the workloads before
// anything starts (local/preflight), composes the node agent (node), the
// local control plane (local/controllers), the embedded API server
// (local/apiserver) and the front door, and owns the order they start and
// stop in. cmd/podgate only turns flags into a Config.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podgate/podgate/activator/server"
	"github.com/podgate/podgate/admission/inject"
	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/internal/loopback"
	"github.com/podgate/podgate/local/apiserver"
	"github.com/podgate/podgate/local/controllers"
	"github.com/podgate/podgate/local/objstore"
	"github.com/podgate/podgate/local/preflight"
	"github.com/podgate/podgate/node"
	"github.com/podgate/podgate/node/images"
	"github.com/podgate/podgate/record"
)

// Config is a `podgate run`.
type Config struct {
	// Workloads are the loaded and validated manifests, as written (the
	// gate is injected here unless NoGate).
	Workloads []*workload.Workload
	PodCIDR   string
	APIAddr   string
	Images    images.Map
	// Replicas, when set, overrides every Deployment's and Knative
	// Service's replicas.
	Replicas *int32
	NodeName string
	NoGate   bool
	// Listen, Domain, ServicePorts, ProbeInterval and ProbeTimeout
	// configure the front door; MetricsListen, when set, serves its
	// metrics.
	Listen                      string
	Domain                      string
	ServicePorts                []server.ServicePort
	ProbeInterval, ProbeTimeout time.Duration
	MetricsListen               string
	// Stdout receives the containers' output, Stderr podgate's lines;
	// nil discards them.
	Stdout, Stderr io.Writer
	// Recorder, when set, takes the facts of the run (docs/timeline.md):
	// a recording's writer, the live timeline's log, or both. It gets
	// them from the moment the API serves until the pods have stopped:
	// every probe attempt of the node agent, what the API says of the
	// pods, their events and EndpointSlices, and the front door's routing
	// decisions and requests. Run does not close it.
	Recorder record.Sink
}

// Run checks everything, starts the API, the control plane, the front
// door and the pods, and runs until ctx ends or SIGINT/SIGTERM (a second
// one kills the pods at once). It stops everything in reverse order; the
// error joins what failed.
func Run(ctx context.Context, cfg Config) (err error) {
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	// podgate's lines, its logger and the front door write from several
	// goroutines.
	cfg.Stderr = &lockedWriter{w: cfg.Stderr}
	r := &run{cfg: cfg, log: slog.New(slog.NewTextHandler(cfg.Stderr, nil)), store: objstore.New(objstore.Options{})}
	r.shutdownCtx, r.force = context.WithCancel(context.Background())
	defer r.force()
	var stack closers
	defer func() { err = errors.Join(err, stack.close()) }()
	// First SIGINT/SIGTERM: graceful stop. Second: kill at once. Caught
	// until the very end, so a second one during the stop is ours.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	stack.push(func() error { signal.Stop(sigs); return nil })
	if err := r.prepare(&stack); err != nil {
		return err
	}
	if err := r.start(ctx, &stack); err != nil {
		return err
	}
	runErr := r.wait(ctx, sigs, &stack)
	go func() {
		select {
		case sig := <-sigs:
			fmt.Fprintf(cfg.Stderr, "podgate: %s: killing pods now\n", sig)
			r.force()
		case <-r.shutdownCtx.Done():
		}
	}()
	return runErr
}

// drainLimit bounds how long requests in flight through the front door
// may take to finish once the pods are gone.
const drainLimit = 5 * time.Second

// run is one Run's parts, in the order they start.
type run struct {
	cfg   Config
	log   *slog.Logger
	store *objstore.Store

	workloads []*workload.Workload // as run: the gate injected
	pods      *controllers.Pods
	agent     *node.Agent
	endpoints *controllers.Endpoints
	apiLn     net.Listener
	door      *server.Server
	apiDone   chan error
	client    kubernetes.Interface // the control API's, for the front door and the recording

	shutdownCtx context.Context
	force       context.CancelFunc
	stopOnce    sync.Once
	started     bool // the pods were started
}

// prepare does everything that can fail before anything serves: the
// manifests are checked, addresses taken, parts made. What it opens is on
// the stack.
func (r *run) prepare(stack *closers) error {
	if err := r.claimPodRange(stack); err != nil {
		return err
	}
	r.pods = controllers.NewPods(r.store, r.log)
	agent, err := node.New(node.Options{
		Events: controllers.NewEvents(r.store), Pods: r.pods, Source: r.pods,
		PodCIDR: r.cfg.PodCIDR, Images: r.cfg.Images,
		Output: r.cfg.Stdout, Logger: r.log, NodeName: r.cfg.NodeName,
		OnProbe: probeRecorder(r.cfg.Recorder),
	})
	if err != nil {
		return err
	}
	r.agent = agent
	// Should a later step fail; once started, the pods stop in their
	// place in the order (start), and this does nothing.
	stack.push(r.stopPods)
	// The workloads as written first, so that a problem names the
	// container the user wrote (the gate is not in the file).
	if err := preflight.Check(r.cfg.Workloads, preflight.OnNode(agent, r.cfg.Replicas)); err != nil {
		return err
	}
	for _, w := range r.cfg.Workloads {
		for _, warn := range preflight.Autoscaling(w, r.cfg.Replicas) {
			fmt.Fprintf(r.cfg.Stderr, "podgate: warning: %s: %s\n", w.ID(), warn)
		}
	}
	var routed []*workload.Workload
	if !r.cfg.NoGate {
		routed = r.cfg.Workloads
	}
	if _, err := CheckRoutes(routed, r.cfg.Domain, r.cfg.ServicePorts); err != nil {
		return err
	}
	if r.apiLn, err = apiserver.Listen(r.cfg.APIAddr); err != nil {
		return inUse(err, "--api")
	}
	stack.push(r.apiLn.Close)
	if r.workloads, err = r.inject(); err != nil {
		return err
	}
	return r.prepareFrontDoor(stack)
}

// inject puts the gate in front of every pod's serving container, the
// same rewrite the Kubernetes webhook applies; its status source is the
// control API (for exec readiness it cannot run).
func (r *run) inject() ([]*workload.Workload, error) {
	if r.cfg.NoGate {
		return r.cfg.Workloads, nil
	}
	out := make([]*workload.Workload, 0, len(r.cfg.Workloads))
	for _, w := range r.cfg.Workloads {
		injected, err := inject.Gate(w, inject.Options{Local: true, APIAddr: r.apiLn.Addr().String()})
		if err != nil {
			return nil, err
		}
		out = append(out, injected)
	}
	return out, preflight.Check(out, preflight.OnNode(r.agent, r.cfg.Replicas))
}

// prepareFrontDoor makes the EndpointSlice and Service controller (a
// Service's Ready follows the front door's count) and the front door.
func (r *run) prepareFrontDoor(stack *closers) error {
	serving := &lateServing{}
	var err error
	r.endpoints, err = controllers.NewEndpoints(controllers.EndpointsConfig{
		Store: r.store, Workloads: r.workloads, Domain: r.cfg.Domain, Serving: serving, Logger: r.log,
	})
	if err != nil {
		return err
	}
	// Endpoints turn not ready before the agent acts on a status.
	r.pods.SetWritten(r.endpoints.PodWritten)
	if err := r.endpoints.Start(); err != nil {
		return err
	}
	// Below the pods on the stack: the slices show the pods gone.
	stack.push(func() error { r.endpoints.Stop(); return nil })
	// The front door has no authentication, like the control API.
	listen, err := loopback.Check(r.cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %q: %w (the front door has no authentication; e.g. %s)", r.cfg.Listen, err, contract.FrontDoorAddr)
	}
	doorLn, err := net.Listen("tcp", listen)
	if err != nil {
		return inUse(fmt.Errorf("front door: %w", err), "--listen")
	}
	stack.push(doorLn.Close)
	// The front door reads the control API as any client would (it is
	// answered once the API serves; the listener queues until then).
	if r.client, err = kubernetes.NewForConfig(&rest.Config{Host: "http://" + r.apiLn.Addr().String()}); err != nil {
		return fmt.Errorf("control API client: %w", err)
	}
	routed := frontDoorRoutes(r.workloads, r.cfg.Stderr)
	ports, err := CheckRoutes(routed, r.cfg.Domain, r.cfg.ServicePorts)
	if err != nil {
		return err
	}
	doorCfg := server.Config{
		Client: r.client, Listener: doorLn, Domain: r.cfg.Domain,
		ServicePorts: ports, OnlyRouter: true, Recorder: r.cfg.Recorder,
		ProbeInterval: r.cfg.ProbeInterval, ProbeTimeout: r.cfg.ProbeTimeout,
		OnChange: r.endpoints.Resync, Logger: r.log, Announce: r.cfg.Stderr,
	}
	if r.cfg.MetricsListen != "" {
		if doorCfg.MetricsListener, err = net.Listen("tcp", r.cfg.MetricsListen); err != nil {
			return inUse(fmt.Errorf("front door metrics: %w", err), "--metrics-listen")
		}
		stack.push(doorCfg.MetricsListener.Close)
	}
	for _, w := range routed {
		doorCfg.Routes = append(doorCfg.Routes, serverRoute(w))
	}
	if r.door, err = server.New(doorCfg); err != nil {
		return err
	}
	// Should a later step fail before the front door serves.
	stack.push(func() error { return r.door.Shutdown(0) })
	serving.door.Store(r.door)
	return nil
}

// start serves the API, the recording's watch, the metrics and the front
// door (before the pods start: early requests wait for a ready pod). Each
// pushes its stop.
func (r *run) start(ctx context.Context, stack *closers) error {
	apiCtx, stopAPI := context.WithCancel(context.WithoutCancel(ctx))
	srv := apiserver.NewServer(apiserver.Config{Store: r.store, Pods: r.pods, Logs: r.agent, Logger: r.log})
	r.apiDone = make(chan error, 1)
	go func() { r.apiDone <- srv.Serve(apiCtx, r.apiLn) }()
	stack.push(func() error { stopAPI(); return <-r.apiDone })
	fmt.Fprintf(r.cfg.Stderr, "podgate: control API on http://%s (podgate get pods --api %s)\n", r.apiLn.Addr(), r.apiLn.Addr())
	// Above the API and below the pods on the stack: its last look sees
	// the pods gone while the API still answers.
	if err := r.watchForRecording(ctx, stack); err != nil {
		return err
	}
	r.door.Serve()
	if addr := r.door.MetricsAddr(); addr != nil {
		fmt.Fprintf(r.cfg.Stderr, "podgate: front door metrics on http://%s/metrics\n", addr)
	}
	// Requests in flight through the front door get drainLimit to finish
	// once the pods are gone.
	stack.push(func() error { return r.door.Shutdown(drainLimit) })
	// The gates learn of their pod's deletion through the API, so the
	// pods stop while it serves.
	stack.push(r.stopPods)
	// Popped first: the front door stops taking requests (held ones get
	// 503) while the pods drain.
	stack.push(func() error { r.door.BeginShutdown(true); return nil })
	return nil
}

// wait starts the pods and waits for the end: a signal, ctx, or a server
// that failed.
func (r *run) wait(ctx context.Context, sigs <-chan os.Signal, stack *closers) error {
	r.started = true
	wl, err := controllers.NewWorkloads(controllers.WorkloadsConfig{
		Store: r.store, Workloads: r.workloads, NodeName: r.agent.NodeName(), Replicas: r.cfg.Replicas, Logger: r.log,
	})
	if err != nil {
		return err
	}
	// Popped first: the pods that stop are not replaced.
	stack.push(func() error { wl.Stop(); return nil })
	if err := wl.Start(); err != nil {
		return err
	}
	for _, w := range r.workloads {
		via := "no gate"
		if w.IsInjected() {
			via = fmt.Sprintf("through the gate on port %d", contract.GatePort)
		}
		port := fmt.Sprintf("on port %d", w.ServingPort)
		if w.ServingPortUndeclared && w.Knative == nil { // $PORT is Knative's contract
			port = fmt.Sprintf("declaring no port, so on $PORT %d", w.ServingPort)
		}
		fmt.Fprintf(r.cfg.Stderr, "podgate: running %s (namespace %s, serving container %s %s, %s)\n",
			w.ID(), w.Namespace, w.ServingContainer, port, via)
	}
	r.door.PrintCurls(r.cfg.Stderr)
	select {
	case sig := <-sigs:
		fmt.Fprintf(r.cfg.Stderr, "podgate: %s: stopping pods gracefully (again to kill them now)\n", sig)
	case <-ctx.Done():
	case err := <-r.apiDone:
		r.apiDone <- err // for the API's closer
		return err
	case err := <-r.door.Served():
		return fmt.Errorf("front door: %w", err)
	}
	return nil
}

// stopPods stops every pod gracefully (killed at once after a second
// signal). A forced kill is what the user asked for: it is reported, not
// returned.
func (r *run) stopPods() error {
	r.stopOnce.Do(func() {
		start := time.Now()
		if err := r.agent.Shutdown(r.shutdownCtx); err != nil {
			fmt.Fprintf(r.cfg.Stderr, "podgate: %v\n", err)
		}
		if r.started {
			fmt.Fprintf(r.cfg.Stderr, "podgate: all pods stopped in %s\n", time.Since(start).Round(time.Millisecond))
		}
	})
	return nil
}

// inUse adds which flag to change to an address already in use.
func inUse(err error, flag string) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%w: is another 'podgate run' using it? Choose another address with %s (port 0 picks a free one)", err, flag)
	}
	return err
}

// lateServing is the front door's count before the front door exists:
// nothing known, so the ready endpoints count until then.
type lateServing struct {
	door atomic.Pointer[server.Server]
}

func (v *lateServing) ServingPods(namespace, name string) (int, bool) {
	d := v.door.Load()
	if d == nil {
		return 0, false
	}
	return d.ServingPods(namespace, name)
}

// lockedWriter serializes writes of several goroutines to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

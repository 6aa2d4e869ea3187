package main

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

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/activator/objstoresource"
	"github.com/podgate/podgate/gateenv"
	"github.com/podgate/podgate/objstore"
	"github.com/podgate/podgate/podspec"
)

// defaultListen is the front door's address: Knative's ingress answers on
// port 80; locally 8080 needs no privileges.
const defaultListen = "127.0.0.1:8080"

// frontDoorDrain bounds how long requests in flight through the front door
// may take to finish once the pods are gone.
const frontDoorDrain = 5 * time.Second

// frontDoor is `podgate run`'s single listener: it routes each request by
// its Host to the activator target of one workload.
type frontDoor struct {
	ln      net.Listener
	router  *activator.Router
	srv     *http.Server
	targets []*activator.Target
	routes  []frontDoorRoute

	stopFeeds context.CancelFunc
	feeds     sync.WaitGroup
	served    chan error

	shutdownOnce sync.Once
	shutdownDone chan error
}

type frontDoorRoute struct {
	workload string // Kind/name, for messages
	host     string
}

// listenFrontDoor opens addr, which must be on loopback: the front door
// has no authentication, like the control API.
func listenFrontDoor(addr string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %w (want HOST:PORT, e.g. %s)", addr, err, defaultListen)
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	ip := net.ParseIP(host)
	if host == "" || ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("--listen %q: the front door listens on loopback only (127.0.0.0/8 or ::1, e.g. %s)", addr, defaultListen)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("front door: %w", err)
	}
	return ln, nil
}

// frontDoorService is the kubernetes.io/service-name of a workload's
// EndpointSlice, as the runtime writes it: the revision for a Knative
// Service (its pods belong to the revision, not the service), the
// workload's own name otherwise.
func frontDoorService(w *podspec.Workload) string {
	if w.Knative != nil && w.Knative.RevisionName != "" {
		return w.Knative.RevisionName
	}
	return w.Name
}

// gatePort is the port the injected gate serves traffic and health checks
// on, as declared on the gate container.
func gatePort(w *podspec.Workload) int32 {
	if g := w.Container(gateenv.ContainerName); g != nil && len(g.Ports) > 0 {
		return g.Ports[0].ContainerPort
	}
	return gateenv.DefaultServingPort
}

// newFrontDoor makes one activator target per workload, fed from the
// store's EndpointSlices and Pods, and routes NAME.NAMESPACE.DOMAIN to it.
// Workloads without the gate get no route: the activator talks only to
// gates (it health-checks them the way Knative's activator checks
// queue-proxy). It does not serve until start.
func newFrontDoor(ln net.Listener, store *objstore.Store, ws []*podspec.Workload, domain string, logger *slog.Logger, stderr io.Writer) (*frontDoor, error) {
	f := &frontDoor{
		ln:           ln,
		router:       activator.NewRouter(domain),
		served:       make(chan error, 1),
		shutdownDone: make(chan error, 1),
	}
	hosts := map[string]string{}
	for _, w := range ws {
		if !w.IsInjected() {
			fmt.Fprintf(stderr, "podgate: no front door route for %s: it runs without the gate (--no-gate)\n", w.ID())
			continue
		}
		host := f.router.Host(w.Namespace, w.Name)
		if other, ok := hosts[host]; ok {
			f.closeTargets()
			return nil, fmt.Errorf("%s and %s in namespace %s would share the front door host %s: rename one", other, w.ID(), w.Namespace, host)
		}
		hosts[host] = w.ID()
		cfg := activator.Config{Logger: logger}
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
		f.router.Set(w.Namespace, w.Name, t)
		f.routes = append(f.routes, frontDoorRoute{workload: w.ID(), host: host})
	}
	// Feeds start here, before the pods: a target then sees every pod from
	// its first endpoint on.
	ctx, cancel := context.WithCancel(context.Background())
	f.stopFeeds = cancel
	i := 0
	for _, w := range ws {
		if !w.IsInjected() {
			continue
		}
		src := &objstoresource.Source{
			Store:     store,
			Namespace: w.Namespace,
			Service:   frontDoorService(w),
			Port:      gatePort(w),
			Logger:    logger,
		}
		t := f.targets[i]
		i++
		f.feeds.Add(1)
		go func() {
			defer f.feeds.Done()
			t.Run(ctx, src)
		}()
	}
	f.srv = &http.Server{
		Handler:           f.router,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	return f, nil
}

// start serves the router on the listener.
func (f *frontDoor) start() {
	go func() {
		err := f.srv.Serve(f.ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		f.served <- err
	}()
}

// printCurls prints one ready-to-paste request per route.
func (f *frontDoor) printCurls(w io.Writer) {
	addr := f.ln.Addr().String()
	fmt.Fprintf(w, "podgate: front door on http://%s (routes by Host: NAME.NAMESPACE.%s)\n", addr, f.domain())
	for _, r := range f.routes {
		fmt.Fprintf(w, "podgate: curl -H 'Host: %s' http://%s/\n", r.host, addr)
	}
}

func (f *frontDoor) domain() string {
	// Host of an empty name and namespace is "..DOMAIN".
	return f.router.Host("", "")[2:]
}

// beginShutdown stops taking connections and answers held requests (they
// could only wait for pods that are stopping) with 503. Requests in flight
// go on while the pods drain.
func (f *frontDoor) beginShutdown() {
	f.shutdownOnce.Do(func() {
		f.closeTargets()
		go func() {
			// No deadline here: finish bounds the wait once the pods,
			// which the requests in flight are talking to, have stopped.
			f.shutdownDone <- f.srv.Shutdown(context.Background())
		}()
	})
}

// finish waits, at most frontDoorDrain, for requests still in flight,
// then cuts them, and stops the endpoint feeds.
func (f *frontDoor) finish() error {
	f.beginShutdown()
	var err error
	select {
	case err = <-f.shutdownDone:
	case <-time.After(frontDoorDrain):
		err = f.srv.Close()
		if e := <-f.shutdownDone; err == nil && !errors.Is(e, http.ErrServerClosed) {
			err = e
		}
	}
	_ = f.ln.Close() // Shutdown closes only a listener that Serve took
	f.stopFeeds()
	f.feeds.Wait()
	return err
}

func (f *frontDoor) closeTargets() {
	for _, t := range f.targets {
		t.Close()
	}
}

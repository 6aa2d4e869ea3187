package gatestatus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Defaults of Options.
const (
	DefaultGateGrace     = 30 * time.Second
	DefaultIdentityWait  = 5 * time.Second
	DefaultEventInterval = time.Minute
	DefaultCheckInterval = 5 * time.Second
	// Component is the Events' source and reporting controller.
	Component = "podgate-node-status"
)

// ClientQPS and ClientBurst are the rate the service's API client should
// allow (rest.Config's QPS and Burst), the kubelet's defaults: the service
// writes for every gate of the node, and client-go's default of 5 per
// second made each write of a busy node wait 200 ms for its turn
// (measured: 100 writes in a row through the service, median 200 ms;
// 8 ms at these).
const (
	ClientQPS   = 50
	ClientBurst = 100
)

// Options configure a Service. Client and Node are required.
type Options struct {
	// Client reaches the API server as the service's own identity: list
	// and watch pods, patch pods/status, create events.
	Client kubernetes.Interface
	// Node is the node whose pods are served (spec.nodeName).
	Node string
	// GateGrace is how long an injected pod's gate container may run
	// without connecting before GateNotConnected (DefaultGateGrace).
	GateGrace time.Duration
	// IdentityWait bounds how long a request from an address no pod of
	// the node has yet waits for the informer to learn it: a gate starts
	// before the kubelet's status write with its pod IP reaches the
	// informer (DefaultIdentityWait).
	IdentityWait time.Duration
	// EventInterval is the least time between two GateRequestRefused
	// Events of one pod and reason (DefaultEventInterval).
	EventInterval time.Duration
	// CheckInterval is how often the gates that never connected are
	// looked for (DefaultCheckInterval).
	CheckInterval time.Duration
	// Clock times the rules above (default: the real clock).
	Clock clock.WithTicker
	// Logger (default: discard).
	Logger *slog.Logger
	// Registry takes the metrics (default: a registry of the service's
	// own); /metrics serves it when it is a Gatherer.
	Registry prometheus.Registerer
}

// Service is the node status service. Create it with New, serve it with
// Run.
type Service struct {
	opts     Options
	log      *slog.Logger
	clock    clock.WithTicker
	pods     *podCache
	informer cache.SharedIndexInformer
	metrics  *metrics
	gatherer prometheus.Gatherer
	writes   *writers
	events   *eventWriter
	started  time.Time

	checks atomic.Int64 // checks for gates that never connected, made so far

	connMu    sync.Mutex
	connected map[types.UID]bool // pods whose gate made an accepted request
	reported  map[types.UID]bool // pods GateNotConnected was written for
}

// New checks opts and builds the service; nothing runs before Run.
func New(opts Options) (*Service, error) {
	if opts.Client == nil || opts.Node == "" {
		return nil, errors.New("node status service: the API client and the node name are required")
	}
	opts = withDefaults(opts)
	s := &Service{opts: opts, log: opts.Logger, clock: opts.Clock, connected: map[types.UID]bool{}, reported: map[types.UID]bool{}}
	reg := opts.Registry
	if reg == nil {
		// A registry of its own, with the process's and Go's series as
		// every podgate server serves them.
		r := prometheus.NewRegistry()
		r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg, s.gatherer = r, r
	} else if g, ok := reg.(prometheus.Gatherer); ok {
		s.gatherer = g
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("node status service metrics: %w", err)
	}
	s.metrics = m
	s.pods = newPodCache(s.clock.Now)
	s.informer = cache.NewSharedIndexInformer(s.nodePods(), &corev1.Pod{}, 0, cache.Indexers{})
	if _, err := s.informer.AddEventHandler(s.pods.handler()); err != nil {
		return nil, fmt.Errorf("node status service informer: %w", err)
	}
	s.events = newEventWriter(opts.Client, opts.Node, s.clock, opts.EventInterval, m, s.log)
	s.writes = newWriters(opts.Client, m)
	return s, nil
}

func withDefaults(o Options) Options {
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&o.GateGrace, DefaultGateGrace}, {&o.IdentityWait, DefaultIdentityWait}, {&o.EventInterval, DefaultEventInterval}, {&o.CheckInterval, DefaultCheckInterval}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// nodePods lists and watches the pods of the node: the one watch this
// service holds on the API server, counted in apiWatchesOpen.
func (s *Service) nodePods() *cache.ListWatch {
	sel := fields.OneTermEqualSelector("spec.nodeName", s.opts.Node).String()
	pods := s.opts.Client.CoreV1().Pods(metav1.NamespaceAll)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			w, err := pods.Watch(ctx, o)
			if err != nil {
				return nil, err
			}
			s.metrics.apiWatchesOpen.Inc()
			return &countedWatch{Interface: w, done: s.metrics.apiWatchesOpen.Dec}, nil
		},
	}
}

// countedWatch calls done once when the watch is stopped.
type countedWatch struct {
	watch.Interface
	once sync.Once
	done func()
}

func (w *countedWatch) Stop() {
	w.Interface.Stop()
	w.once.Do(w.done)
}

// Run serves on ln until ctx ends: the informer, the check for gates
// that never connected, and the API. Watches end when ctx ends; Run
// returns once everything it started has stopped (nil then), or the
// server's error.
func (s *Service) Run(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.started = s.clock.Now()
	var wg sync.WaitGroup
	wg.Go(func() { s.informer.Run(ctx.Done()) })
	wg.Go(func() {
		if cache.WaitForCacheSync(ctx.Done(), s.informer.HasSynced) {
			s.pods.setSynced()
			s.log.Info("node status service ready", "node", s.opts.Node)
		}
	})
	wg.Go(func() { s.checkLoop(ctx) })
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
		served <- nil
	}
	cancel() // ends the watches and the writes waiting
	shut, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	if serr := srv.Shutdown(shut); serr != nil && err == nil {
		err = fmt.Errorf("node status service shutdown: %w", serr)
	}
	<-served
	wg.Wait()
	s.writes.stop()
	s.events.stop()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Package kubewatch records what the API says about pods: their
// containers' states, their conditions and the gate's verdict, the
// events about them, and their EndpointSlice endpoints, as recording
// facts. It is written once on client-go and watches `podgate run`'s
// control API and a real kube-apiserver alike.
//
// Each change is one fact: every object is diffed against the last state
// the watcher saw of it, so a pod status write that changes one container
// yields one container fact, not a copy of the pod. Facts carry the time
// they were observed, except events with a precise time of their own
// (see eventTime): the API's other timestamps (a container's startedAt,
// an event's lastTimestamp) have whole seconds on the wire, coarser than
// the probe and request facts they sit beside.
//
// It does not use internal/informers: that package's handlers only ring
// a bell and the consumer looks at the stores' latest state, which merges
// quick successive changes (terminated, waiting, running) into one. A
// recording wants each of them, so the handlers here diff every
// notification.
package kubewatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/podgate/podgate/record"
)

// Config says what to watch and where the facts go.
type Config struct {
	// Client reads pods, events and EndpointSlices.
	Client kubernetes.Interface
	// Namespace is the one namespace watched; "" watches every namespace.
	Namespace string
	// Sink receives the facts. Required.
	Sink record.Sink
	// ProbesFromEvents adds a probe fact for every Unhealthy and
	// ProbeWarning event: on a cluster the kubelet's events are the only
	// probe facts there are (only failures and warnings, and not every
	// one: the kubelet's event recorder drops some under load). `podgate
	// run` records each probe attempt itself and leaves it off.
	ProbesFromEvents bool
	// Now is the observation clock (default time.Now).
	Now func() time.Time
}

// Watcher runs the informers and diffs what they tell.
type Watcher struct {
	cfg     Config
	cancel  context.CancelFunc
	running sync.WaitGroup

	mu       sync.Mutex
	stopping bool // Stop's final look owns the state from here
	pods     map[string]*podSeen
	events   map[string]int32 // namespace/name → count recorded
	slices   map[string]*sliceSeen
}

// Start lists and watches pods, events and EndpointSlices, records the
// pods' and endpoints' state as it is now (events that happened before
// are not facts of this recording: only those created or repeated from
// now on), and returns once the initial lists are recorded. On error
// nothing is left running.
func Start(ctx context.Context, cfg Config) (*Watcher, error) {
	if cfg.Client == nil || cfg.Sink == nil {
		return nil, errors.New("kubewatch: Config.Client and Config.Sink are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ns := cfg.Namespace
	if err := canList(ctx, cfg.Client, ns); err != nil {
		return nil, err
	}
	w := &Watcher{cfg: cfg, pods: map[string]*podSeen{}, events: map[string]int32{}, slices: map[string]*sliceSeen{}}
	infs := []struct {
		inf     cache.SharedIndexInformer
		observe func(obj any, initial bool)
		gone    func(key string)
	}{
		{coreinformers.NewFilteredPodInformer(cfg.Client, ns, 0, cache.Indexers{}, nil), w.observePod, w.podGone},
		{coreinformers.NewFilteredEventInformer(cfg.Client, ns, 0, cache.Indexers{}, nil), w.observeEvent, w.eventGone},
		{discoveryinformers.NewFilteredEndpointSliceInformer(cfg.Client, ns, 0, cache.Indexers{}, nil), w.observeSlice, w.sliceGone},
	}
	runCtx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	var synced []cache.InformerSynced
	for _, i := range infs {
		reg, err := i.inf.AddEventHandler(handler(i.observe, i.gone))
		if err != nil {
			cancel()
			return nil, fmt.Errorf("kubewatch: %w", err)
		}
		synced = append(synced, reg.HasSynced)
	}
	for _, i := range infs {
		w.running.Go(func() { i.inf.Run(runCtx.Done()) })
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		w.stop()
		return nil, fmt.Errorf("kubewatch: listing pods, events and EndpointSlices: %w", ctx.Err())
	}
	return w, nil
}

// canList asks for one object of each kind, so that an API server that
// cannot be reached, or an identity that may not list, is an error at once
// naming what failed; the informers would retry it quietly.
func canList(ctx context.Context, client kubernetes.Interface, ns string) error {
	one := metav1.ListOptions{Limit: 1}
	where := "namespace " + ns
	if ns == "" {
		where = "every namespace"
	}
	for _, l := range []struct {
		what string
		list func() error
	}{
		{"pods", func() error { _, err := client.CoreV1().Pods(ns).List(ctx, one); return err }},
		{"events", func() error { _, err := client.CoreV1().Events(ns).List(ctx, one); return err }},
		{"endpointslices", func() error { _, err := client.DiscoveryV1().EndpointSlices(ns).List(ctx, one); return err }},
	} {
		if err := l.list(); err != nil {
			return fmt.Errorf("kubewatch: listing %s in %s: %w", l.what, where, err)
		}
	}
	return nil
}

// handler calls observe for every add and update (with the new object)
// and gone for a deletion.
func handler(observe func(obj any, initial bool), gone func(key string)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj, false) },
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				gone(key)
			}
		},
	}
}

// Stop takes a last look (a list of each kind, diffed as the informers'
// notifications are, so changes made just before Stop are in the
// recording even if their watch events are still on their way), then
// stops the informers. A failed last look is returned; the informers are
// stopped either way.
func (w *Watcher) Stop(ctx context.Context) error {
	w.mu.Lock()
	w.stopping = true
	w.mu.Unlock()
	defer w.stop()
	return w.lastLook(ctx)
}

func (w *Watcher) stop() {
	w.cancel()
	w.running.Wait()
}

// lastLook lists every kind and diffs it; what the watcher saw that the
// list lacks is gone.
func (w *Watcher) lastLook(ctx context.Context) error {
	ns, all := w.cfg.Namespace, metav1.ListOptions{}
	pods, err := w.cfg.Client.CoreV1().Pods(ns).List(ctx, all)
	if err != nil {
		return fmt.Errorf("kubewatch: last look at the pods: %w", err)
	}
	events, err := w.cfg.Client.CoreV1().Events(ns).List(ctx, all)
	if err != nil {
		return fmt.Errorf("kubewatch: last look at the events: %w", err)
	}
	slices, err := w.cfg.Client.DiscoveryV1().EndpointSlices(ns).List(ctx, all)
	if err != nil {
		return fmt.Errorf("kubewatch: last look at the EndpointSlices: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.cfg.Now()
	present := map[string]bool{}
	for i := range pods.Items {
		present[key(&pods.Items[i].ObjectMeta)] = true
		w.podLocked(&pods.Items[i], now)
	}
	for k := range w.pods {
		if !present[k] {
			delete(w.pods, k)
		}
	}
	for i := range events.Items {
		w.eventLocked(&events.Items[i], false, now)
	}
	clear(present)
	for i := range slices.Items {
		present[key(&slices.Items[i].ObjectMeta)] = true
		w.sliceLocked(&slices.Items[i], now)
	}
	for k := range w.slices {
		if !present[k] {
			w.sliceGoneLocked(k, now)
		}
	}
	return nil
}

func key(m *metav1.ObjectMeta) string { return m.Namespace + "/" + m.Name }

// locked runs f with the state, unless Stop's last look took over.
func (w *Watcher) locked(f func(now time.Time)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopping {
		// A notification older than the last look's list would undo
		// what it recorded.
		return
	}
	f(w.cfg.Now())
}

func (w *Watcher) observePod(obj any, _ bool) {
	if p, ok := obj.(*corev1.Pod); ok {
		w.locked(func(now time.Time) { w.podLocked(p, now) })
	}
}

func (w *Watcher) podGone(k string) {
	w.locked(func(time.Time) { delete(w.pods, k) })
}

func (w *Watcher) observeEvent(obj any, initial bool) {
	if e, ok := obj.(*corev1.Event); ok {
		w.locked(func(now time.Time) { w.eventLocked(e, initial, now) })
	}
}

func (w *Watcher) eventGone(k string) {
	w.locked(func(time.Time) { delete(w.events, k) })
}

func (w *Watcher) observeSlice(obj any, _ bool) {
	if s, ok := obj.(*discoveryv1.EndpointSlice); ok {
		w.locked(func(now time.Time) { w.sliceLocked(s, now) })
	}
}

func (w *Watcher) sliceGone(k string) {
	w.locked(func(now time.Time) { w.sliceGoneLocked(k, now) })
}

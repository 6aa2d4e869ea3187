package kubebackends

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/gate/contract"
)

// Index names of the Feed's EndpointSlice informer.
const (
	byService = "service" // NAMESPACE/kubernetes.io/service-name
	byPod     = "pod"     // NAMESPACE/NAME of every Pod an endpoint targets
)

// Feed is the front door's one backend feed: one EndpointSlice informer
// and one Pod informer over every namespace (or one), shared by the
// targets of every Service, for `podgate run` and on a cluster alike. An
// informer pair per Service would list and watch every pod once per
// Service. It also answers
// whether a Service has EndpointSlices at all, without a request to the
// API server, so an unknown host is refused at once.
//
// Pods are kept stripped to what the fast-path rule reads (podTransform):
// a cluster's pods in full would cost the activator far more memory than
// the rule needs.
type Feed struct {
	slices, pods cache.SharedIndexInformer
	onlyRouter   bool
	// gatesChanged is rung when a pod turns terminating, goes, or gets
	// its IP (GatesChanged).
	gatesChanged chan struct{}

	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{} // by NAMESPACE/SERVICE
}

// Options say what a Feed follows.
type Options struct {
	// Namespace is the one namespace followed; every namespace when empty.
	Namespace string
	// OnlyRouter is set when this front door is the only router to its
	// pods (`podgate run`): each pod then carries its gate's admin address
	// (activator.Pod.AdminAddr), where its target tells the gate that it
	// sends it nothing more, so a terminating gate need not wait out its
	// quiet period. On a cluster other routers (the ingress, another
	// activator) may still send, so it stays unset.
	OnlyRouter bool
}

// NewFeed makes the informers over client. They run from Run.
func NewFeed(client kubernetes.Interface, opts Options) (*Feed, error) {
	namespace := opts.Namespace
	hasService, err := labels.NewRequirement(ServiceNameLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	c := &Feed{subs: map[string]map[chan struct{}]struct{}{}, onlyRouter: opts.OnlyRouter, gatesChanged: make(chan struct{}, 1)}
	// Informers of their own, not a shared factory: the factory links every
	// API group's informer into the binary (tens of MB).
	c.slices = discoveryinformers.NewFilteredEndpointSliceInformer(client, namespace, 0,
		cache.Indexers{byService: serviceIndex, byPod: podIndex},
		func(o *metav1.ListOptions) { o.LabelSelector = labels.NewSelector().Add(*hasService).String() })
	c.pods = coreinformers.NewFilteredPodInformer(client, namespace, 0, cache.Indexers{}, nil)
	for _, step := range []error{
		c.slices.SetTransform(sliceTransform),
		c.pods.SetTransform(podTransform),
	} {
		if step != nil {
			return nil, fmt.Errorf("endpoint informers: %w", step)
		}
	}
	if _, err := c.slices.AddEventHandler(cache.ResourceEventHandlerFuncs{
		// A pod a slice no longer lists may have lost its last open target
		// (Gates' Followed).
		AddFunc:    func(o any) { c.ringSlice(o) },
		UpdateFunc: func(old, o any) { c.ringSlice(old); c.ringSlice(o); c.ringGates() },
		DeleteFunc: func(o any) { c.ringSlice(o); c.ringGates() },
	}); err != nil {
		return nil, fmt.Errorf("endpoint informers: %w", err)
	}
	if _, err := c.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { c.ringPod(o); c.ringGates() },
		UpdateFunc: func(old, o any) {
			// The pod's spec does not change; what the snapshot reads that
			// does is its deletion, and a new pod under the old name.
			op, np := old.(*corev1.Pod), o.(*corev1.Pod)
			if op.UID != np.UID || (op.DeletionTimestamp == nil) != (np.DeletionTimestamp == nil) {
				c.ringPod(o)
			}
			if op.UID != np.UID || (op.DeletionTimestamp == nil) != (np.DeletionTimestamp == nil) || op.Status.PodIP != np.Status.PodIP {
				c.ringGates()
			}
		},
		DeleteFunc: func(o any) { c.ringPod(o); c.ringGates() },
	}); err != nil {
		return nil, fmt.Errorf("endpoint informers: %w", err)
	}
	return c, nil
}

// Run runs the informers until ctx ends.
func (c *Feed) Run(ctx context.Context) {
	var running sync.WaitGroup
	running.Go(func() { c.slices.Run(ctx.Done()) })
	running.Go(func() { c.pods.Run(ctx.Done()) })
	running.Wait()
}

// WaitForSync waits until both informers have listed, or ctx ends (false).
func (c *Feed) WaitForSync(ctx context.Context) bool {
	return cache.WaitForCacheSync(ctx.Done(), c.slices.HasSynced, c.pods.HasSynced)
}

// HasService says whether any EndpointSlice is labelled for the Service
// (kubernetes.io/service-name). The EndpointSlice controller writes one,
// empty if need be, for every Service with a selector; a Service without
// one has slices when someone writes them.
func (c *Feed) HasService(namespace, name string) bool {
	objs, err := c.slices.GetIndexer().ByIndex(byService, namespace+"/"+name)
	return err == nil && len(objs) > 0
}

// Backends is the Service's pods as an activator.Backends, their gates on
// port (GatePort when 0), a pod without a gate on the Service's own
// target port, with their gates' admin addresses when the feed is the
// only router (Options.OnlyRouter).
func (c *Feed) Backends(namespace, service string, port int32) *ServiceBackends {
	return &ServiceBackends{c: c, key: namespace + "/" + service, service: service, port: port}
}

// ServiceBackends is one Service's pods (Feed.Backends).
type ServiceBackends struct {
	c       *Feed
	key     string
	service string
	port    int32
}

// Snapshots streams snapshots, the first once the informers have synced.
func (s *ServiceBackends) Snapshots(ctx context.Context) <-chan Snapshot {
	out := make(chan Snapshot)
	go func() {
		defer close(out)
		changed := s.c.subscribe(s.key)
		defer s.c.unsubscribe(s.key, changed)
		if !s.c.WaitForSync(ctx) {
			return
		}
		stream(ctx, out, changed, s.snapshot)
	}()
	return out
}

// Pods streams the snapshots' pods (activator.Backends).
func (s *ServiceBackends) Pods(ctx context.Context) <-chan []activator.Pod {
	out := make(chan []activator.Pod)
	go func() {
		defer close(out)
		for snap := range s.Snapshots(ctx) {
			select {
			case out <- snap.Pods:
			case <-ctx.Done():
			}
		}
	}()
	return out
}

func (s *ServiceBackends) snapshot() Snapshot {
	objs, _ := s.c.slices.GetIndexer().ByIndex(byService, s.key)
	slices := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		slices = append(slices, o.(*discoveryv1.EndpointSlice))
	}
	pod := func(namespace, name string) *corev1.Pod {
		o, ok, _ := s.c.pods.GetStore().GetByKey(namespace + "/" + name)
		if !ok {
			return nil
		}
		return o.(*corev1.Pod)
	}
	pods, unroutable := podsOf(s.service, s.port, slices, pod, s.c.onlyRouter)
	return Snapshot{Pods: pods, Unroutable: unroutable}
}

// ServiceRef is the Service as its EndpointSlices' owner reference names
// it (its UID with it, so that an Event on it shows in `kubectl describe
// service`), without reading Services: the activator has no right to.
func (c *Feed) ServiceRef(namespace, name string) *corev1.ObjectReference {
	ref := &corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: namespace, Name: name}
	objs, _ := c.slices.GetIndexer().ByIndex(byService, namespace+"/"+name)
	for _, o := range objs {
		for _, own := range o.(*discoveryv1.EndpointSlice).OwnerReferences {
			if own.Kind == "Service" && own.Name == name {
				ref.UID = own.UID
				return ref
			}
		}
	}
	return ref
}

func (c *Feed) subscribe(key string) chan struct{} {
	ch := make(chan struct{}, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.subs[key] == nil {
		c.subs[key] = map[chan struct{}]struct{}{}
	}
	c.subs[key][ch] = struct{}{}
	return ch
}

func (c *Feed) unsubscribe(key string, ch chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.subs[key], ch)
	if len(c.subs[key]) == 0 {
		delete(c.subs, key)
	}
}

// ring tells the streams of the Services keys that something of theirs
// changed; they build their snapshot from the informers' stores.
func (c *Feed) ring(keys ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		for ch := range c.subs[k] {
			select {
			case ch <- struct{}{}:
			default: // one is pending already
			}
		}
	}
}

func (c *Feed) ringSlice(o any) {
	if keys, err := serviceIndex(unwrap(o)); err == nil {
		c.ring(keys...)
	}
}

// ringPod rings the Services whose slices list the pod.
func (c *Feed) ringPod(o any) {
	p, ok := unwrap(o).(*corev1.Pod)
	if !ok {
		return
	}
	slices, err := c.slices.GetIndexer().ByIndex(byPod, p.Namespace+"/"+p.Name)
	if err != nil {
		return
	}
	var keys []string
	for _, sl := range slices {
		k, _ := serviceIndex(sl)
		keys = append(keys, k...)
	}
	c.ring(keys...)
}

// unwrap is a deleted object whose deletion the informer missed (it
// relisted), or o.
func unwrap(o any) any {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return o
}

func serviceIndex(o any) ([]string, error) {
	sl, ok := o.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil, errors.New("not an EndpointSlice")
	}
	svc, ok := sl.Labels[ServiceNameLabel]
	if !ok {
		return nil, nil
	}
	return []string{sl.Namespace + "/" + svc}, nil
}

func podIndex(o any) ([]string, error) {
	sl, ok := o.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil, errors.New("not an EndpointSlice")
	}
	var out []string
	for _, ep := range sl.Endpoints {
		if ref := ep.TargetRef; ref != nil && ref.Kind == "Pod" {
			out = append(out, sl.Namespace+"/"+ref.Name)
		}
	}
	return out, nil
}

// sliceTransform drops the managed fields and annotations, which the
// activator never reads.
func sliceTransform(o any) (any, error) {
	if sl, ok := o.(*discoveryv1.EndpointSlice); ok {
		sl.ManagedFields, sl.Annotations = nil, nil
	}
	return o, nil
}

// podTransform keeps of a pod what podsOf reads: its identity, its
// deletion, its readiness gates, each container's name, ports and
// readiness and startup probes (activator.FastPathAllowed), and the
// gate's admin token (contract.EnvAdminToken). A pod's
// status, environment, volumes and managed fields are most of its size.
func podTransform(o any) (any, error) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return o, nil
	}
	keep := func(cs []corev1.Container) []corev1.Container {
		out := make([]corev1.Container, len(cs))
		for i, c := range cs {
			out[i] = corev1.Container{
				Name: c.Name, Ports: c.Ports, RestartPolicy: c.RestartPolicy,
				ReadinessProbe: c.ReadinessProbe, StartupProbe: c.StartupProbe,
			}
			if c.Name == contract.GateContainerName {
				// The gate's admin token, which its /unrouted asks for,
				// and whether it believes the activator's word (Gates).
				for _, e := range c.Env {
					if (e.Name == contract.EnvAdminToken || e.Name == contract.EnvOnlyRouter) && e.ValueFrom == nil {
						out[i].Env = append(out[i].Env, corev1.EnvVar{Name: e.Name, Value: e.Value})
					}
				}
			}
		}
		return out
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
			DeletionTimestamp: p.DeletionTimestamp,
		},
		Spec: corev1.PodSpec{
			InitContainers: keep(p.Spec.InitContainers),
			Containers:     keep(p.Spec.Containers),
			ReadinessGates: p.Spec.ReadinessGates,
		},
		// Where its gate is told that it gets nothing more (Gates).
		Status: corev1.PodStatus{PodIP: p.Status.PodIP},
	}, nil
}

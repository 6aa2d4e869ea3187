package controllers

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/local/objstore"
	"github.com/podgate/podgate/local/servingv1"
)

// Labels on the EndpointSlices.
const (
	// LabelServiceName ties an EndpointSlice to its Service.
	LabelServiceName = discoveryv1.LabelServiceName
	// LabelManagedBy says who writes an EndpointSlice.
	LabelManagedBy = discoveryv1.LabelManagedBy
	managedBy      = "podgate"
)

// ServingCounter counts a workload's pods that receive requests: the front
// door's view (endpoint ready and gate ready), which can be behind or
// ahead of the endpoints by a health check.
type ServingCounter interface {
	// ServingPods returns how many pods of the workload take traffic;
	// known is false when the view does not route to it (then the ready
	// endpoints count).
	ServingPods(namespace, name string) (n int, known bool)
}

// EndpointsConfig configures the Endpoints controller.
type EndpointsConfig struct {
	// Store holds the pods it watches and receives the EndpointSlices and
	// Knative Services. Required.
	Store *objstore.Store
	// Workloads are the services: each gets an EndpointSlice of the pods
	// its selector picks (a Deployment's spec.selector, a Knative
	// revision's label, a Pod's own name).
	Workloads []*workload.Workload
	// Domain is the domain of a Knative Service's status.url (default
	// DefaultDomain).
	Domain string
	// Serving, when set, is the front door's count of the pods that take
	// traffic: a Knative Service's Ready then follows it instead of the
	// ready endpoints. Call Resync when it changes.
	Serving ServingCounter
	// Clock stamps condition transitions; nil is the real clock.
	Clock clock.PassiveClock
	// Logger reports failed writes; nil discards.
	Logger *slog.Logger
}

// Endpoints is the EndpointSlice controller of `podgate run`, and the
// part of Knative that writes a Service's status: it watches pods and
// derives both from what the pods' statuses say (docs/architecture.md).
type Endpoints struct {
	cfg      EndpointsConfig
	services []*service

	mu   sync.Mutex
	pods map[string]*corev1.Pod // by namespace/name, as the store has them
	// resyncAll: the watch started over, so the next pod event writes
	// every service, not only the pod's (one whose pods all went during
	// the gap has no event of its own).
	resyncAll bool

	stop context.CancelFunc
	done chan struct{}
}

// service is one workload's EndpointSlice and, for a Knative Service, its
// status; the fields below the line are guarded by Endpoints.mu.
type service struct {
	w        *workload.Workload
	name     string // the EndpointSlice's, and its service-name label
	selector func(*corev1.Pod) bool

	everReady bool
	conds     map[string]servingv1.Condition
}

// NewEndpoints prepares the controller; Start runs it.
func NewEndpoints(cfg EndpointsConfig) (*Endpoints, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("controllers: EndpointsConfig.Store is required")
	}
	if cfg.Domain == "" {
		cfg.Domain = DefaultDomain
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Endpoints{cfg: cfg, pods: map[string]*corev1.Pod{}}
	for _, w := range cfg.Workloads {
		sel, err := selectorOf(w)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.ID(), err)
		}
		e.services = append(e.services, &service{w: w, name: ServiceName(w), selector: sel, conds: map[string]servingv1.Condition{}})
	}
	return e, nil
}

// ServiceName names a workload's EndpointSlice (and Service): a Pod's
// own name, a Deployment's name, a Knative Service's revision.
func ServiceName(w *workload.Workload) string {
	if w.Knative != nil {
		return w.Knative.RevisionName
	}
	return w.Name
}

// selectorOf picks the workload's pods as a Service in front of it would.
func selectorOf(w *workload.Workload) (func(*corev1.Pod) bool, error) {
	inNS := func(p *corev1.Pod) bool { return p.Namespace == w.Namespace }
	switch {
	case w.Kind == workload.KindPod:
		return func(p *corev1.Pod) bool { return inNS(p) && p.Name == w.Name }, nil
	case w.Knative != nil:
		rev := w.Knative.RevisionName
		return func(p *corev1.Pod) bool { return inNS(p) && p.Labels[workload.LabelKnativeRevision] == rev }, nil
	}
	sel := labels.SelectorFromSet(w.Template.Labels)
	if d, ok := w.Object().(*appsv1.Deployment); ok && d.Spec.Selector != nil {
		s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			return nil, fmt.Errorf("spec.selector: %w", err)
		}
		sel = s
	}
	return func(p *corev1.Pod) bool { return inNS(p) && sel.Matches(labels.Set(p.Labels)) }, nil
}

// Start writes every workload's (empty) EndpointSlice and Service, then
// follows the pods until Stop.
func (e *Endpoints) Start() error {
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := e.cfg.Store.Pods.Watch(ctx, "")
	if err != nil {
		cancel()
		return fmt.Errorf("watch pods: %w", err)
	}
	e.stop, e.done = cancel, make(chan struct{})
	e.syncAll()
	go e.follow(ctx, ch)
	return nil
}

// Stop ends the watch; the objects stay as last written.
func (e *Endpoints) Stop() {
	if e.stop == nil {
		return
	}
	e.stop()
	<-e.done
}

func (e *Endpoints) follow(ctx context.Context, ch <-chan objstore.Event[*corev1.Pod]) {
	defer close(e.done)
	for {
		for ev := range ch {
			if ev.Type == watch.Error {
				break
			}
			e.observe(ev.Object, ev.Type == watch.Deleted)
		}
		if ctx.Err() != nil {
			return
		}
		// Fell behind: start over from the current pods.
		var err error
		if ch, err = e.cfg.Store.Pods.Watch(ctx, ""); err != nil {
			return
		}
		e.mu.Lock()
		e.pods = map[string]*corev1.Pod{}
		e.resyncAll = true
		e.mu.Unlock()
	}
}

// PodWritten takes a pod as just written, before the watch brings it
// (see Pods.SetWritten).
func (e *Endpoints) PodWritten(p *corev1.Pod) { e.observe(p, false) }

// observe records a pod's state and writes what follows from it: the
// EndpointSlice and status of the services that select the pod, as it is
// now or as it was (a pod's change concerns no other service, and with
// many services, rebuilding every slice on every pod write made each write
// cost O(services × pods)). States come from the watch and from
// PodWritten, so one may be older than what is recorded: the
// resourceVersion decides.
func (e *Endpoints) observe(p *corev1.Pod, gone bool) {
	k := p.Namespace + "/" + p.Name
	e.mu.Lock()
	defer e.mu.Unlock()
	prev, known := e.pods[k]
	if known && prev.UID == p.UID && newer(prev.ResourceVersion, p.ResourceVersion) {
		return
	}
	if gone {
		delete(e.pods, k)
	} else {
		e.pods[k] = p
	}
	if e.resyncAll {
		e.resyncAll = false
		e.syncAllLocked()
		return
	}
	for _, s := range e.services {
		if s.selector(p) || known && s.selector(prev) {
			e.syncLocked(s)
		}
	}
}

// newer reports a resourceVersion after another (the store's are
// numbers).
func newer(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x > y
}

// Resync recomputes the status of the Knative Service namespace/name:
// call it when the Serving count changed.
func (e *Endpoints) Resync(namespace, name string) {
	for _, s := range e.services {
		if s.w.Knative != nil && s.w.Namespace == namespace && s.w.Name == name {
			e.mu.Lock()
			eps := e.endpointsLocked(s)
			e.syncServiceLocked(s, eps)
			e.mu.Unlock()
		}
	}
}

func (e *Endpoints) syncAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.syncAllLocked()
}

func (e *Endpoints) syncAllLocked() {
	for _, s := range e.services {
		e.syncLocked(s)
	}
}

// syncLocked writes the service's EndpointSlice and status.
func (e *Endpoints) syncLocked(s *service) {
	eps := e.endpointsLocked(s)
	e.writeSliceLocked(s, eps)
	e.syncServiceLocked(s, eps)
}

// endpoint is what the EndpointSlice and the service status use of a pod.
type endpoint struct {
	pod         *corev1.Pod
	serving     bool // the pod's Ready condition
	terminating bool // deletionTimestamp set
	notReady    []string
	failure     *containerFailure
}

func (ep endpoint) ready() bool { return ep.serving && !ep.terminating }

// endpointsLocked lists the service's pods that are endpoints, by name:
// those with an IP that have not finished (Succeeded or Failed pods leave
// the slice; terminating ones stay).
func (e *Endpoints) endpointsLocked(s *service) []endpoint {
	var out []endpoint
	for _, p := range e.pods {
		if !s.selector(p) || p.Status.PodIP == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		ep := endpoint{pod: p, terminating: p.DeletionTimestamp != nil, failure: containerFailed(p.Status.ContainerStatuses)}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				ep.serving = c.Status == corev1.ConditionTrue
			}
		}
		ep.notReady = notReadyContainers(countedStatuses(p))
		out = append(out, ep)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pod.Name < out[j].pod.Name })
	return out
}

// countedStatuses are the statuses readiness counts: the main containers'
// and the native sidecars' (the gate is one).
func countedStatuses(p *corev1.Pod) []corev1.ContainerStatus {
	sidecars := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		sidecars[c.Name] = c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
	}
	var out []corev1.ContainerStatus
	for _, cs := range p.Status.InitContainerStatuses {
		if sidecars[cs.Name] {
			out = append(out, cs)
		}
	}
	return append(out, p.Status.ContainerStatuses...)
}

// writeSliceLocked writes the EndpointSlice as the EndpointSlice
// controller does (docs/facts.md §3): serving = pod Ready, terminating =
// deletion started, ready = serving and not terminating.
func (e *Endpoints) writeSliceLocked(s *service, eps []endpoint) {
	portName, port := endpointPort(s.w)
	proto := corev1.ProtocolTCP
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: s.name, Namespace: s.w.Namespace, Labels: sliceLabels(s)},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port, Protocol: &proto}},
		Endpoints:   []discoveryv1.Endpoint{},
	}
	for _, ep := range eps {
		serving, terminating, ready := ep.serving, ep.terminating, ep.ready()
		node := ep.pod.Spec.NodeName
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{ep.pod.Status.PodIP},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ep.pod.Namespace, Name: ep.pod.Name, UID: ep.pod.UID},
			NodeName:   &node,
		})
	}
	if _, err := e.cfg.Store.EndpointSlices.Put(slice); err != nil {
		e.cfg.Logger.Warn("publish endpoints", "workload", s.w.ID(), "err", err)
	}
}

// endpointPort is where traffic for the workload goes: the serving port,
// or the gate's once the gate is injected.
func endpointPort(w *workload.Workload) (string, int32) {
	if w.IsInjected() {
		return contract.GateTrafficPort(w.Container(contract.GateContainerName))
	}
	if c := w.Container(w.ServingContainer); c != nil {
		for _, p := range c.Ports {
			if p.ContainerPort == w.ServingPort && p.Name != "" {
				return p.Name, p.ContainerPort
			}
		}
	}
	return "http", w.ServingPort
}

func sliceLabels(s *service) map[string]string {
	l := map[string]string{LabelServiceName: s.name, LabelManagedBy: managedBy}
	if k := s.w.Knative; k != nil {
		l[workload.LabelKnativeService] = s.w.Name
		l[workload.LabelKnativeConfiguration] = s.w.Name
		l[workload.LabelKnativeRevision] = k.RevisionName
	}
	return l
}

package controllers

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/local/objstore"
)

// Environment the control plane puts first in the serving container's
// env, as Knative's revision controller does (PORT and K_* are reserved
// there): the container can refer to them, or replace them.
const (
	EnvPort = "PORT"
)

// WorkloadsConfig configures the Workloads controller.
type WorkloadsConfig struct {
	// Store receives the pods. Required.
	Store *objstore.Store
	// Workloads are the manifests to run.
	Workloads []*workload.Workload
	// NodeName is the one node's: the scheduler's choice for every pod.
	// Required.
	NodeName string
	// Replicas, when set, overrides every Deployment's and Knative
	// Service's replicas (a Pod is always one pod).
	Replicas *int32
	// Clock stamps the PodScheduled condition and the Scheduled event;
	// nil is the real clock.
	Clock clock.PassiveClock
	// Logger reports failed writes; nil discards.
	Logger *slog.Logger
}

// Workloads is what the Deployment, ReplicaSet and Knative controllers
// and the scheduler do for `podgate run`: it creates each workload's pods,
// named and labelled as they would be, bound to the one node, and
// replaces a Deployment's or Knative Service's pod as soon as its deletion
// starts (the ReplicaSet controller does not count terminating pods).
type Workloads struct {
	cfg   WorkloadsConfig
	ctrls []*controller

	mu       sync.Mutex
	stopping bool
	replaced map[types.UID]bool // pods whose replacement was made

	stop context.CancelFunc
	done chan struct{}
}

// controller is one workload's.
type controller struct {
	w        *workload.Workload
	naming   podNaming
	replicas int
	ownerUID types.UID
}

// NewWorkloads prepares the controller; Start creates the pods.
func NewWorkloads(cfg WorkloadsConfig) (*Workloads, error) {
	if cfg.Store == nil || cfg.NodeName == "" {
		return nil, fmt.Errorf("controllers: WorkloadsConfig.Store and NodeName are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Workloads{cfg: cfg, replaced: map[types.UID]bool{}}
	for _, w := range cfg.Workloads {
		c.ctrls = append(c.ctrls, &controller{
			w: w, naming: namingFor(w), replicas: ReplicasOf(w, cfg.Replicas),
			ownerUID: types.UID(fmt.Sprintf("podgate-%s-%s-%s", w.Kind, w.Namespace, w.Name)),
		})
	}
	return c, nil
}

// ReplicasOf is how many pods a workload runs: one for a Pod, else its
// replicas, or override when set.
func ReplicasOf(w *workload.Workload, override *int32) int {
	switch {
	case w.Kind == workload.KindPod:
		return 1
	case override != nil:
		return int(*override)
	}
	return int(w.Replicas)
}

// Start creates every workload's pods, then replaces deleted ones until
// Stop.
func (c *Workloads) Start() error {
	ctx, cancel := context.WithCancel(context.Background())
	// Watching from now on: the pods made below come as changes too.
	_, rv := c.cfg.Store.Pods.List("")
	ch, err := c.cfg.Store.Pods.Watch(ctx, rv)
	if err != nil {
		cancel()
		return fmt.Errorf("watch pods: %w", err)
	}
	c.stop, c.done = cancel, make(chan struct{})
	go c.follow(ctx, ch)
	var firstErr error
	for _, ctl := range c.ctrls {
		for range ctl.replicas {
			if err := c.createPod(ctl); err != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	return firstErr
}

// Stop ends the replacements: when podgate stops, the pods go for good.
func (c *Workloads) Stop() {
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	if c.stop != nil {
		c.stop()
		<-c.done
	}
}

func (c *Workloads) follow(ctx context.Context, ch <-chan objstore.Event[*corev1.Pod]) {
	defer close(c.done)
	for {
		for ev := range ch {
			if ev.Type == watch.Error {
				break
			}
			if ev.Type == watch.Deleted || ev.Object.DeletionTimestamp != nil {
				c.replace(ev.Object)
			}
		}
		if ctx.Err() != nil {
			return
		}
		// Fell behind: count again what the watch may have missed.
		rv := c.reconcile()
		var err error
		if ch, err = c.cfg.Store.Pods.Watch(ctx, rv); err != nil {
			return
		}
	}
}

// reconcile brings every controller back to its replica count of pods
// that are not terminating, as the ReplicaSet controller counts; it
// returns the version of the list it counted.
func (c *Workloads) reconcile() string {
	pods, rv := c.cfg.Store.Pods.List("")
	have := map[*controller]int{}
	c.mu.Lock()
	for _, p := range pods {
		ctl := c.ownerOf(p)
		switch {
		case ctl == nil:
		case p.DeletionTimestamp != nil:
			c.replaced[p.UID] = true // counted as missing below
		default:
			have[ctl]++
		}
	}
	stopping := c.stopping
	c.mu.Unlock()
	for _, ctl := range c.ctrls {
		if stopping || ctl.w.Kind == workload.KindPod {
			continue
		}
		for range ctl.replicas - have[ctl] {
			_ = c.createPod(ctl)
		}
	}
	return rv
}

// replace makes a new pod for a controller's pod whose deletion started.
func (c *Workloads) replace(p *corev1.Pod) {
	ctl := c.ownerOf(p)
	if ctl == nil {
		return
	}
	c.mu.Lock()
	skip := c.stopping || c.replaced[p.UID]
	c.replaced[p.UID] = true
	c.mu.Unlock()
	if !skip {
		_ = c.createPod(ctl)
	}
}

// ownerOf finds the Deployment's or Service's controller of p; a bare Pod
// has none, and is not replaced.
func (c *Workloads) ownerOf(p *corev1.Pod) *controller {
	for _, ref := range p.OwnerReferences {
		for _, ctl := range c.ctrls {
			if ref.UID == ctl.ownerUID {
				return ctl
			}
		}
	}
	return nil
}

// createPod writes one pod of ctl, scheduled to the node, and the
// scheduler's event.
func (c *Workloads) createPod(ctl *controller) error {
	w := ctl.w
	obj := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            ctl.naming.fixedName,
			GenerateName:    ctl.naming.generateName,
			Namespace:       w.Namespace,
			Labels:          maps.Clone(ctl.naming.labels),
			Annotations:     maps.Clone(w.Template.Annotations),
			OwnerReferences: ctl.ownerRefs(),
		},
		Spec: *w.Template.Spec.DeepCopy(),
	}
	obj.Spec.NodeName = c.cfg.NodeName
	servingEnv(w, &obj.Spec)
	now := metav1.NewTime(c.cfg.Clock.Now())
	obj.Status = corev1.PodStatus{
		Phase:      corev1.PodPending,
		QOSClass:   QOSClass(&obj.Spec),
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now}},
	}
	created, err := c.cfg.Store.Pods.Create(obj)
	if err != nil {
		c.cfg.Logger.Error("create pod", "workload", w.ID(), "err", err)
		return fmt.Errorf("%s: create pod: %w", w.ID(), err)
	}
	c.scheduled(created, now)
	return nil
}

// servingEnv puts PORT (and a Knative Service's K_SERVICE,
// K_CONFIGURATION, K_REVISION) first in the serving container's env.
func servingEnv(w *workload.Workload, spec *corev1.PodSpec) {
	for i := range spec.Containers {
		c := &spec.Containers[i]
		if c.Name != w.ServingContainer {
			continue
		}
		env := []corev1.EnvVar{{Name: EnvPort, Value: strconv.Itoa(int(w.ServingPort))}}
		if k := w.Knative; k != nil {
			env = append(env, corev1.EnvVar{Name: "K_SERVICE", Value: w.Name},
				corev1.EnvVar{Name: "K_CONFIGURATION", Value: w.Name}, corev1.EnvVar{Name: "K_REVISION", Value: k.RevisionName})
		}
		c.Env = append(env, c.Env...)
	}
}

// scheduled records the scheduler's Scheduled event.
func (c *Workloads) scheduled(p *corev1.Pod, now metav1.Time) {
	ev := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", p.Name, now.UnixNano()), Namespace: p.Namespace},
		InvolvedObject:      corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		Reason:              "Scheduled",
		Message:             fmt.Sprintf("Successfully assigned %s/%s to %s", p.Namespace, p.Name, c.cfg.NodeName),
		Source:              corev1.EventSource{Component: "default-scheduler"},
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                corev1.EventTypeNormal,
		ReportingController: "default-scheduler",
	}
	if _, err := c.cfg.Store.Events.Create(ev); err != nil {
		c.cfg.Logger.Warn("record event", "err", err)
		return
	}
	c.cfg.Logger.Info(ev.Message, "pod", p.Namespace+"/"+p.Name, "reason", ev.Reason, "field", "")
}

// ownerRefs names the ReplicaSet that would own the pods.
func (ctl *controller) ownerRefs() []metav1.OwnerReference {
	if ctl.w.Kind == workload.KindPod {
		return nil
	}
	yes := true
	name := ctl.naming.generateName
	name = name[:len(name)-1] // NAME-<hash>, the ReplicaSet
	return []metav1.OwnerReference{{
		APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: ctl.ownerUID,
		Controller: &yes, BlockOwnerDeletion: &yes,
	}}
}

// QOSClass is the pod's QoS class as the API server computes it, coarsely:
// no requests or limits anywhere is BestEffort, limits equal to requests
// for cpu and memory everywhere is Guaranteed, anything else Burstable.
func QOSClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	all := slices.Concat(spec.InitContainers, spec.Containers)
	any, guaranteed := false, true
	for _, c := range all {
		if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
			any = true
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			l, ok := c.Resources.Limits[r]
			if !ok {
				guaranteed = false
				continue
			}
			if req, ok := c.Resources.Requests[r]; ok && req.Cmp(l) != 0 {
				guaranteed = false
			}
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	default:
		return corev1.PodQOSBurstable
	}
}

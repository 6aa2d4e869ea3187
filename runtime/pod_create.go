package runtime

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/gateenv"
	"github.com/podgate/podgate/podspec"
	"github.com/podgate/podgate/probe"
	"github.com/podgate/podgate/prober"
)

// newPod creates the pod in the store (named like its controller would),
// gives it an IP, resolves its containers and prepares its probes. The
// worker is not started yet.
func newPod(wl *workload) (*pod, error) {
	a := wl.a
	w := wl.w
	ip, err := a.ipam.allocate("")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.ID(), err)
	}
	obj := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            wl.naming.fixedName,
			GenerateName:    wl.naming.generateName,
			Namespace:       w.Namespace,
			Labels:          copyMap(wl.naming.labels),
			Annotations:     copyMap(w.Template.Annotations),
			OwnerReferences: wl.ownerRefs(),
		},
		Spec: *w.Template.Spec.DeepCopy(),
	}
	obj.Spec.NodeName = a.opts.NodeName
	now := metav1.NewTime(a.clock.Now())
	obj.Status = corev1.PodStatus{
		Phase:    corev1.PodPending,
		QOSClass: qosClass(&obj.Spec),
		Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now,
		}},
	}
	created, err := a.store.Pods.Create(obj)
	if err != nil {
		a.ipam.release(ip)
		return nil, fmt.Errorf("%s: create pod: %w", w.ID(), err)
	}
	p := &pod{
		a: a, wl: wl,
		namespace: created.Namespace, name: created.Name, uid: created.UID,
		ip: ip, obj: created, q: newQueue[podEvent](), exited: make(chan struct{}),
		conditions: map[corev1.PodConditionType]corev1.PodCondition{},
	}
	p.conditions[corev1.PodScheduled] = created.Status.Conditions[0]
	p.obj.Status = corev1.PodStatus{}
	a.ipam.setOwner(ip, p.namespace+"/"+p.name)
	info := podInfo{
		name: p.name, namespace: p.namespace, uid: string(p.uid),
		labels: created.Labels, annotations: created.Annotations,
		nodeName: a.opts.NodeName, serviceAccount: created.Spec.ServiceAccountName,
		podIP: ip.String(), hostIP: HostIP,
	}
	p.inits, p.mains, _ = a.prepareContainers(w, &p.obj.Spec, info)
	p.byName = map[string]*container{}
	var probes []prober.Probe
	for _, c := range append(append([]*container{}, p.inits...), p.mains...) {
		p.byName[c.name] = c
		probes = append(probes, p.probesOf(c)...)
	}
	mgr, err := prober.NewManager(probes, prober.Options{
		Clock:    a.clock,
		OnUpdate: func(u prober.Update) { p.post(evProbe{u}) },
	})
	if err != nil {
		// Validation should have caught it; the pod cannot run.
		a.ipam.release(ip)
		_, _ = a.store.Pods.Delete(p.namespace, p.name)
		return nil, fmt.Errorf("%s: %w", w.ID(), err)
	}
	p.mgr = mgr
	a.events.record(p.ref(), "", corev1.EventTypeNormal, ReasonScheduled,
		fmt.Sprintf("Successfully assigned %s/%s to %s", p.namespace, p.name, a.opts.NodeName), componentScheduler)
	return p, nil
}

// attempt is one probe tick of spec against target, on the shared runner.
func (a *Agent) attempt(spec *corev1.Probe, target probe.Target) prober.AttemptFunc {
	return func(ctx context.Context) probe.Outcome { return a.runner.Run(ctx, spec, target) }
}

// probesOf wires c's probes to the shared runner.
func (p *pod) probesOf(c *container) []prober.Probe {
	var out []prober.Probe
	add := func(kind prober.Kind, spec *corev1.Probe) {
		if spec == nil {
			return
		}
		target := c.probeTarget(p.ip.String())
		if p.wl.w.IsInjected() && routedThroughGate(spec) {
			// The gate's answer carries the original probe's message:
			// record what probing the container directly would have.
			target.MessageHeader = gateenv.ProbeMessageHeader
		}
		if podspec.IsAggressive(spec) {
			// Knative's periodSeconds 0 ("probe aggressively until ready")
			// is the gate's to honour; the node agent probes as often as a
			// kubelet can, every second, as Knative's own kubelet probe of
			// queue-proxy does.
			spec = spec.DeepCopy()
			spec.PeriodSeconds = 1
		}
		out = append(out, prober.Probe{Container: c.name, Kind: kind, Spec: spec,
			Attempt: p.a.attempt(spec, target)})
	}
	add(prober.Readiness, c.spec.ReadinessProbe)
	add(prober.Liveness, c.spec.LivenessProbe)
	add(prober.Startup, c.spec.StartupProbe)
	return out
}

// routedThroughGate: a liveness or startup probe the injector sent
// through the gate's /probe/<container>/<kind> on its admin port.
func routedThroughGate(spec *corev1.Probe) bool {
	h := spec.HTTPGet
	if h == nil || h.Host != "" || h.Port.IntValue() != gateenv.DefaultAdminPort {
		return false
	}
	_, _, err := gateenv.ParseProbePath(h.Path)
	return err == nil
}

// qosClass is the pod's QoS class as the API server computes it, coarsely:
// no requests or limits anywhere is BestEffort, limits equal to requests
// for cpu and memory everywhere is Guaranteed, anything else Burstable.
func qosClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	all := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
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

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

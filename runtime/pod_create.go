package runtime

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/gateenv"
	"github.com/podgate/podgate/podspec"
	"github.com/podgate/podgate/probe"
	"github.com/podgate/podgate/prober"
	"github.com/podgate/podgate/runtime/env"
	"github.com/podgate/podgate/runtime/podstatus"
	"github.com/podgate/podgate/runtime/queue"
	"github.com/podgate/podgate/wire"
)

// newPod prepares the pod worker of obj, a pod bound to this node: it
// gives the pod an IP, resolves its containers and prepares its probes.
// The worker is not started yet.
func newPod(a *Agent, obj *corev1.Pod) (*pod, error) {
	id := obj.Namespace + "/" + obj.Name
	key := string(obj.UID)
	if key == "" {
		key = id
	}
	pn, err := a.net.Add(key)
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", id, err)
	}
	ip := pn.IP()
	p := &pod{
		a:         a,
		namespace: obj.Namespace, name: obj.Name, uid: obj.UID,
		ip: ip, net: pn, obj: obj.DeepCopy(), q: queue.New[podEvent](), exited: make(chan struct{}),
		conditions: map[corev1.PodConditionType]corev1.PodCondition{},
		qos:        obj.Status.QOSClass,
		injected:   hasGate(&obj.Spec),
	}
	for _, c := range obj.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			p.conditions[corev1.PodScheduled] = c
		}
	}
	p.gateConds = podstatus.GateConditions(obj)
	p.obj.Status = corev1.PodStatus{}
	if a.opts.PodSetup != nil {
		p.extras = a.opts.PodSetup(obj.DeepCopy())
	}
	info := env.PodInfo{
		Name: p.name, Namespace: p.namespace, UID: string(p.uid),
		Labels: obj.Labels, Annotations: obj.Annotations,
		NodeName: a.opts.NodeName, ServiceAccount: obj.Spec.ServiceAccountName,
		PodIP: ip.String(), HostIP: a.hostIP,
	}
	p.inits, p.mains, _ = a.prepareContainers(field.NewPath("spec"), &p.obj.Spec, info, p.extras.Env, p.enter())
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
		p.closeNet()
		return nil, fmt.Errorf("pod %s: %w", id, err)
	}
	p.mgr = mgr
	return p, nil
}

// enter is how the pod's processes start inside its network (proc.Spec
// and probe.HostExecutor's Enter); nil on the loopback network, where
// they start as any process does.
func (p *pod) enter() func(func() error) error {
	if p.a.loopback {
		return nil
	}
	return p.net.Enter
}

// closeNet releases the pod's network: none of its processes runs.
func (p *pod) closeNet() {
	if err := p.net.Close(); err != nil {
		p.a.log.Warn("release pod network", "pod", p.namespace+"/"+p.name, "err", err)
	}
}

// hasGate reports a pod with the gate injected.
func hasGate(spec *corev1.PodSpec) bool {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			if c.Name == wire.GateContainerName {
				return true
			}
		}
	}
	return false
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
		if p.injected && routedThroughGate(spec) {
			// The gate's answer carries the original probe's message:
			// record what probing the container directly would have.
			target.MessageHeader = wire.ProbeMessageHeader
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
	if h == nil || h.Host != "" || h.Port.IntValue() != wire.GateAdminPort {
		return false
	}
	_, _, err := gateenv.ParseProbePath(h.Path)
	return err == nil
}

package node

import (
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/node/env"
	"github.com/podgate/podgate/node/podprobes"
	"github.com/podgate/podgate/node/podstatus"
	"github.com/podgate/podgate/node/proc"
	"github.com/podgate/podgate/node/queue"
	"github.com/podgate/podgate/node/volumes"
	"github.com/podgate/podgate/probe/prober"
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
	var pn PodNet = hostNet{a.opts.HostIP}
	if !obj.Spec.HostNetwork {
		var err error
		if pn, err = a.net.Add(key); err != nil {
			return nil, fmt.Errorf("pod %s: %w", id, err)
		}
	}
	ip := pn.IP()
	p := &pod{
		a:         a,
		namespace: obj.Namespace, name: obj.Name, uid: obj.UID,
		ip: ip, net: pn, obj: obj.DeepCopy(), q: queue.New[podEvent](),
		hostNetwork: obj.Spec.HostNetwork,
		conditions:  map[corev1.PodConditionType]corev1.PodCondition{},
		qos:         obj.Status.QOSClass,
		injected:    podprobes.HasGate(&obj.Spec),
	}
	if a.podFiles {
		var err error
		if p.dir, err = a.podDir(obj); err != nil {
			p.closeNet()
			return nil, fmt.Errorf("pod %s: its directory: %w", id, err)
		}
		if p.files, err = a.writePodFiles(obj, ip, p.dir); err != nil {
			p.closeNet()
			return nil, fmt.Errorf("pod %s: %w", id, err)
		}
	}
	for _, c := range obj.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			p.conditions[corev1.PodScheduled] = c
		}
	}
	for _, e := range p.files.events {
		p.record(nil, corev1.EventTypeWarning, e.Reason, e.Message)
	}
	p.gateConds = podstatus.GateConditions(obj)
	p.obj.Status = corev1.PodStatus{}
	if a.opts.PodSetup != nil {
		p.extras = a.opts.PodSetup(obj.DeepCopy())
	}
	if a.podFiles && len(obj.Spec.Volumes) > 0 {
		var err error
		if p.vols, err = volumes.New(p.obj, filepath.Join(p.dir, "volumes"), a.opts.Volumes, p.extras.Volumes); err != nil {
			p.closeNet()
			return nil, fmt.Errorf("pod %s: %w", id, err)
		}
	}
	info := env.PodInfo{
		Name: p.name, Namespace: p.namespace, UID: string(p.uid),
		Labels: obj.Labels, Annotations: obj.Annotations,
		NodeName: a.opts.NodeName, ServiceAccount: obj.Spec.ServiceAccountName,
		PodIP: ip.String(), HostIP: a.hostIP,
	}
	p.inits, p.mains = a.newContainers(p.obj, info, p.extras.Env, p.enter())
	p.bindFiles()
	p.byName = map[string]*container{}
	var probes []prober.Probe
	for _, c := range append(append([]*container{}, p.inits...), p.mains...) {
		p.byName[c.name] = c
		probes = append(probes, podprobes.Of(c.spec, c.probeTarget(ip.String()), p.injected, a.bindProbe)...)
	}
	var record func(prober.Update)
	if onProbe := a.opts.OnProbe; onProbe != nil {
		record = func(u prober.Update) { onProbe(p.namespace, p.name, u) }
	}
	mgr, err := podprobes.NewManager(probes, a.clock, func(u prober.Update) { p.post(evProbe{u}) }, record)
	if err != nil {
		// Validation should have caught it; the pod cannot run.
		p.closeNet()
		return nil, fmt.Errorf("pod %s: %w", id, err)
	}
	p.mgr = mgr
	return p, nil
}

// enter is how the pod's processes start inside its network (proc.Spec
// and probe.HostExecutor's Enter); nil on the loopback network and on
// the host network, where they start as any process does.
func (p *pod) enter() func(func() error) error {
	if p.a.loopback || p.hostNetwork {
		return nil
	}
	return p.net.Enter
}

// closeNet releases the pod's network and removes its directory (its DNS
// files and volumes): none of its processes runs.
func (p *pod) closeNet() {
	if err := p.net.Close(); err != nil {
		p.a.log.Warn("release pod network", "pod", p.namespace+"/"+p.name, "err", err)
	}
	if p.dir != "" {
		if err := os.RemoveAll(p.dir); err != nil {
			p.a.log.Warn("remove the pod's directory", "pod", p.namespace+"/"+p.name, "err", err)
		}
	}
}

// bindFiles has every container's process see the pod's DNS files.
func (p *pod) bindFiles() {
	for _, c := range append(append([]*container{}, p.inits...), p.mains...) {
		if len(p.files.binds) > 0 && c.sec.Refused == "" {
			sec := proc.Security{}
			if c.sec.Security != nil {
				sec = *c.sec.Security
			}
			sec.Binds = p.files.binds
			c.sec.Security = &sec
		}
	}
}

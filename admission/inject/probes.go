package inject

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
)

// loopback is where Knative's queue-proxy reaches its sibling containers.
const loopback = "127.0.0.1"

// rewriter copies (and in a Knative Service moves) probes into the gate's
// configuration.
type rewriter struct {
	w    *workload.Workload
	opts Options
	cfg  *contract.Config
	// fastest is the shortest readiness period seen, 0 for an aggressive
	// probe, -1 while none was seen.
	fastest int32
}

// containersInOrder: the serving container, the other containers, then
// native sidecars (restartable init containers) — Knative's order for
// SERVING_READINESS_PROBE, extended to sidecars.
func (r *rewriter) containersInOrder() []*corev1.Container {
	spec := r.w.PodSpec()
	s := r.w.ServingIndex()
	out := []*corev1.Container{&spec.Containers[s]}
	for i := range spec.Containers {
		if i != s {
			out = append(out, &spec.Containers[i])
		}
	}
	for i := range spec.InitContainers {
		if c := &spec.InitContainers[i]; isNativeSidecar(c) {
			out = append(out, c)
		}
	}
	return out
}

// readiness gives the gate its copy of a container's readiness probe. In
// a Pod or Deployment the probe STAYS on its container: the kubelet marks
// that container unready with its own message and events, and the gate
// runs a copy of a network (HTTP, TCP, gRPC) probe for fast aggregation
// and delegates an exec one (it reads the container's status). Readiness
// means what it means without the gate: only the probes the user wrote
// count, so a Pod whose serving container has an exec readiness probe (or
// none) is ready without its port accepting connections, as on
// Kubernetes.
//
// A Knative Service is different, by Knative's design: the serving
// container's probe (and every sidecar's, with multi-container probing)
// moves into the queue container, which runs it (aggressively for
// periodSeconds 0, which a kubelet cannot); the serving container is
// always checked on its port (Knative defaults a TCP probe when there is
// none, and pairs an exec one with a TCP check).
func (r *rewriter) readiness(c *corev1.Container, serving bool) error {
	if r.w.Knative != nil {
		return r.moveReadiness(c, serving)
	}
	p := c.ReadinessProbe
	switch {
	case p == nil:
	case p.Exec != nil:
		r.cfg.DelegatedReadiness = append(r.cfg.DelegatedReadiness, c.Name)
	default:
		cp, err := r.forGate(c, p, "readinessProbe")
		if err != nil {
			return err
		}
		r.add(c.Name, cp)
	}
	return nil
}

// moveReadiness is readiness for a Knative Service: the probe moves into
// the gate (see readiness).
func (r *rewriter) moveReadiness(c *corev1.Container, serving bool) error {
	p := c.ReadinessProbe
	r.notePeriod(p)
	switch {
	case p == nil && serving:
		// Knative's defaults always give the serving container a probe;
		// a workload that skipped them still gets Knative's TCP check.
		r.add(c.Name, &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(r.w.ServingPort)}},
			SuccessThreshold: 1,
		})
		r.notePeriod(&corev1.Probe{})
	case p == nil:
	case p.Exec != nil:
		r.cfg.DelegatedReadiness = append(r.cfg.DelegatedReadiness, c.Name)
		if serving {
			tcp := p.DeepCopy()
			tcp.ProbeHandler = corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(r.w.ServingPort)}}
			r.add(c.Name, tcp)
		}
	default:
		moved, err := r.forGate(c, p, "readinessProbe")
		if err != nil {
			return err
		}
		r.add(c.Name, moved)
		c.ReadinessProbe = nil
	}
	return nil
}

// add appends a probe to the gate's readiness list.
func (r *rewriter) add(container string, p *corev1.Probe) {
	if p.TCPSocket != nil {
		p.TCPSocket.Host = r.host(p.TCPSocket.Host)
	}
	r.cfg.ReadinessProbes = append(r.cfg.ReadinessProbes, p)
	r.cfg.ReadinessContainers = append(r.cfg.ReadinessContainers, container)
}

func (r *rewriter) notePeriod(p *corev1.Probe) {
	if p == nil {
		return
	}
	if r.fastest < 0 || p.PeriodSeconds < r.fastest {
		r.fastest = p.PeriodSeconds
	}
}

// gatePeriod is the period of the kubelet's readiness probe of the gate
// in a Knative Service, where that probe answers for every container (their
// probes moved into the gate): the fastest container's, so no container's
// readiness is noticed later than that container asked for (Knative copies
// the serving container's timing, and sidecar periods are lost).
// Aggressive probing has no period; the kubelet's shortest, 1 s, is the
// closest.
func (r *rewriter) gatePeriod() int32 {
	if r.fastest <= 0 {
		return 1
	}
	return r.fastest
}

// watch records a copy of a container's network liveness probe for the
// gate, which runs it with the same timing (a watched probe) and takes the
// container out of traffic as its failures near the kubelet's threshold.
// The probe itself stays on the container: the kubelet (or podgate's
// node) probes it directly, so a stalled or restarting gate never fails a
// container's liveness, and the probe's messages and events are the
// kubelet's own. Exec probes are not watched (the gate cannot run a
// command in another container); startup probes are not copied (until a
// container has started the kubelet's status calls it not ready, which
// the gate reads).
func (r *rewriter) watch(c *corev1.Container) error {
	p := c.LivenessProbe
	if p == nil || p.Exec != nil {
		return nil
	}
	cp, err := r.forGate(c, p, "livenessProbe")
	if err != nil {
		return err
	}
	if r.cfg.WatchedProbes == nil {
		r.cfg.WatchedProbes = map[string]contract.ContainerProbes{}
	}
	r.cfg.WatchedProbes[c.Name] = contract.ContainerProbes{Liveness: cp}
	return nil
}

// forGate is the copy of a probe the gate runs: named ports resolved
// against the container (the gate does not know its ports), host filled
// as the mode wants.
func (r *rewriter) forGate(c *corev1.Container, p *corev1.Probe, what string) (*corev1.Probe, error) {
	out := p.DeepCopy()
	resolve := func(port intstr.IntOrString) (intstr.IntOrString, error) {
		if port.Type != intstr.String {
			return port, nil
		}
		n, ok := resolveNamedPort(c, port.StrVal)
		if !ok {
			return port, fmt.Errorf("container %q %s: no such named port %q", c.Name, what, port.StrVal)
		}
		return intstr.FromInt32(n), nil
	}
	var err error
	switch {
	case out.HTTPGet != nil:
		out.HTTPGet.Port, err = resolve(out.HTTPGet.Port)
		out.HTTPGet.Host = r.host(out.HTTPGet.Host)
	case out.TCPSocket != nil:
		out.TCPSocket.Port, err = resolve(out.TCPSocket.Port)
		out.TCPSocket.Host = r.host(out.TCPSocket.Host)
	}
	return out, err
}

// host keeps a host the user set (the kubelet would use it too). Otherwise
// on Kubernetes the gate reaches its siblings at 127.0.0.1, as
// queue-proxy does; locally the host stays empty and the gate uses its
// pod's address (PODGATE_UPSTREAM_HOST).
func (r *rewriter) host(h string) string {
	if h != "" || r.opts.Local {
		return h
	}
	return loopback
}

// resolveNamedPort finds a container port by name.
func resolveNamedPort(c *corev1.Container, name string) (int32, bool) {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort, true
		}
	}
	return 0, false
}

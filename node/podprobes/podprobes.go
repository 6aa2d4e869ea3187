// Package podprobes is which probes a container of a pod gets from the
// node agent and how they are wired: its readiness, liveness and startup
// probes against the container's target, a probe the gate injector routed
// through the gate's admin port marked so that the gate's answer carries
// the original probe's message, and Knative's "probe aggressively"
// (periodSeconds 0) run every second, as often as a kubelet can; and
// a pod's prober.Manager, which a recording may listen to (NewManager).
package podprobes

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/probe"
	"github.com/podgate/podgate/probe/prober"
)

// BindFunc prepares probe spec against target once and returns its tick
// (the agent's shared probe.Runner's Bind): a worker runs the same probe
// against the same target on every tick.
type BindFunc func(spec *corev1.Probe, target probe.Target) func(ctx context.Context) probe.Outcome

// Of is the probes of the container c, aimed at target and run as bind
// prepares them. gated says the pod has the gate injected (HasGate): only
// then does a probe on the gate's admin port count as routed through the
// gate.
func Of(c *corev1.Container, target probe.Target, gated bool, bind BindFunc) []prober.Probe {
	var out []prober.Probe
	add := func(kind prober.Kind, spec *corev1.Probe) {
		if spec == nil {
			return
		}
		t := target
		if gated && RoutedThroughGate(spec) {
			// The gate's answer carries the original probe's message:
			// record what probing the container directly would have.
			t.MessageHeader = contract.ProbeMessageHeader
		}
		if prober.IsAggressive(spec) {
			// Knative's periodSeconds 0 ("probe aggressively until ready")
			// is the gate's to honour; the node agent probes as often as a
			// kubelet can, every second, as Knative's own kubelet probe of
			// queue-proxy does.
			spec = spec.DeepCopy()
			spec.PeriodSeconds = 1
		}
		out = append(out, prober.Probe{Container: c.Name, Kind: kind, Spec: spec, Attempt: bind(spec, t)})
	}
	add(prober.Readiness, c.ReadinessProbe)
	add(prober.Liveness, c.LivenessProbe)
	add(prober.Startup, c.StartupProbe)
	return out
}

// RoutedThroughGate: a liveness or startup probe the injector sent
// through the gate's /probe/<container>/<kind> on its admin port.
func RoutedThroughGate(spec *corev1.Probe) bool {
	h := spec.HTTPGet
	if h == nil || h.Host != "" || h.Port.IntValue() != contract.GateAdminPort {
		return false
	}
	_, _, err := contract.ParseProbePath(h.Path)
	return err == nil
}

// NewManager runs the probes of one pod on clk. act hears the updates the
// pod acts on; record, when set, hears every update first, an Attempted
// one for each tick included (successes too): a recording of the pod's
// probes, which the pod does not act on.
func NewManager(probes []prober.Probe, clk clock.Clock, act, record func(prober.Update)) (*prober.Manager, error) {
	return prober.NewManager(probes, prober.Options{
		Clock:        clk,
		EveryAttempt: record != nil,
		OnUpdate: func(u prober.Update) {
			if record != nil {
				record(u)
				if u.Type == prober.Attempted {
					return
				}
			}
			act(u)
		},
	})
}

// HasGate reports a pod with the gate injected.
func HasGate(spec *corev1.PodSpec) bool {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			if c.Name == contract.GateContainerName {
				return true
			}
		}
	}
	return false
}

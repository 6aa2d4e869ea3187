package workload

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/gate/contract"
)

// GateRef locates the gate of an injected pod: a native sidecar among the
// init containers (the default), or a regular container.
type GateRef struct {
	init  bool // among spec.initContainers
	index int  // -1: no gate
}

// Found reports whether the pod carries the gate.
func (g GateRef) Found() bool { return g.index >= 0 }

// IsContainer says whether spec.containers[i] is the gate.
func (g GateRef) IsContainer(i int) bool { return !g.init && g.index == i }

// IsInit says whether spec.initContainers[i] is the gate.
func (g GateRef) IsInit(i int) bool { return g.init && g.index == i }

// FindGate finds the gate container of an injected pod: named podgate (or
// Knative's queue-proxy, adopted in a revision's pod) and configured by
// the injector (it always writes the status source). A user container
// merely named podgate is not the gate.
func FindGate(spec *corev1.PodSpec) GateRef {
	isGate := func(c *corev1.Container) bool {
		if c.Name != contract.GateContainerName && c.Name != contract.KnativeQueueContainerName {
			return false
		}
		for _, e := range c.Env {
			if e.Name == contract.EnvStatusSource {
				return true
			}
		}
		return false
	}
	for i := range spec.InitContainers {
		if isGate(&spec.InitContainers[i]) {
			return GateRef{init: true, index: i}
		}
	}
	for i := range spec.Containers {
		if isGate(&spec.Containers[i]) {
			return GateRef{index: i}
		}
	}
	return GateRef{index: -1}
}

// IsInjected reports whether the workload's pod already carries the gate.
func (w *Workload) IsInjected() bool { return FindGate(w.PodSpec()).Found() }

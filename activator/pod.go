package activator

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/gate/contract"
)

// Pod is one pod of a target as the endpoint source sees it.
type Pod struct {
	// Name identifies the pod within its target (namespace/name or uid);
	// a pod whose Addr changes is treated as a new backend.
	Name string
	// Addr is host:port of the pod's gate traffic port (PodIP:8012), or,
	// for a Direct pod, of its serving port.
	Addr string
	// Direct marks a pod without a gate (not injected): requests go
	// straight to its serving port, and Kubernetes' ready condition alone
	// says whether it may take them. There is no gate to health-check; a
	// refused connection takes it out until a TCP connect succeeds again.
	Direct bool
	// Ready is the endpoint's ready condition (serving and not
	// terminating): Kubernetes' verdict on the pod.
	Ready bool
	// Terminating is set once the pod is being deleted. A terminating pod
	// never gets new traffic, whatever its gate says.
	Terminating bool
	// FastPath allows traffic on the gate's answer alone before the
	// endpoint first turns ready. Sources set it with FastPathAllowed.
	FastPath bool
	// AdminAddr is host:port of the gate's admin port, where the target
	// says that it sends the pod nothing any more (see unrouted.go);
	// empty: it says nothing.
	AdminAddr string
	// AdminToken is the gate's admin token (from the pod's spec), without
	// which the gate refuses the message from outside the pod.
	AdminToken string
}

// Backends is a source of a target's pods: package kube on a cluster,
// activator/kubebackends on client-go informers, locally and on a cluster. It is defined here, by its consumer.
type Backends interface {
	// Pods streams complete snapshots of the target's pods: the current
	// set first, then a new snapshot after every change. The channel is
	// closed when ctx is done. A source may skip intermediate snapshots
	// (only the latest matters).
	Pods(ctx context.Context) <-chan []Pod
}

// FastPathAllowed says whether the gate sees every input to the pod's
// readiness, so that its answer may be trusted before Kubernetes marks the
// endpoint ready. Not so when any container — regular, init or native
// sidecar — has an exec readiness probe (the gate learns its result only
// through the node agent or kubelet, no earlier than the endpoint) or a
// startup probe (readiness is not even evaluated until it passes), or when
// the pod has readiness gates (conditions the gate does not know) other
// than the gate's own (contract.ContainersReadyCondition), which says what the
// gate answers.
//
// Knative's activator applies the same rule to the user container only,
// so a sidecar's failing exec readiness probe does not keep traffic away
// (docs/facts.md §5); podgate looks at every container.
func FastPathAllowed(spec *corev1.PodSpec) bool {
	if spec == nil {
		return false
	}
	for _, g := range spec.ReadinessGates {
		if g.ConditionType != contract.ContainersReadyCondition {
			return false
		}
	}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			c := &cs[i]
			if c.Name == contract.GateContainerName {
				// The gate's own startup probe passes once it serves:
				// a gate that answers has passed it.
				continue
			}
			if c.StartupProbe != nil || (c.ReadinessProbe != nil && c.ReadinessProbe.Exec != nil) {
				return false
			}
		}
	}
	return true
}

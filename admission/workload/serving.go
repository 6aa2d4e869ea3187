package workload

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/gate/contract"
)

// pickServingContainer decides which container receives traffic and on
// which port.
//
// Knative: the container that declares a port (validation insists on
// exactly one), or the only container; its first port, 8080 if it
// declares none.
//
// Pods and Deployments name no serving container, so podgate takes the
// first container that declares a TCP port, and its first TCP port; with
// no port anywhere, the first container on Knative's 8080.
func pickServingContainer(w *Workload) {
	cs := w.PodSpec().Containers
	gate := FindGate(w.PodSpec())
	w.ServingContainer, w.ServingPort, w.ServingPortUndeclared = "", contract.KnativeUserPort, false
	first := -1
	for i := range cs {
		if gate.IsContainer(i) {
			continue
		}
		if first < 0 {
			first = i
		}
		for _, p := range cs[i].Ports {
			if w.Knative == nil && p.Protocol != "" && p.Protocol != corev1.ProtocolTCP {
				continue
			}
			w.ServingContainer = cs[i].Name
			if p.ContainerPort != 0 {
				w.ServingPort = p.ContainerPort
			}
			w.ServingPortUndeclared = p.ContainerPort == 0
			return
		}
	}
	if first >= 0 {
		w.ServingContainer = cs[first].Name
		w.ServingPortUndeclared = true
	}
}

// ServingIndex is the index of the serving container in
// PodSpec().Containers, -1 if there is none.
func (w *Workload) ServingIndex() int {
	for i := range w.PodSpec().Containers {
		if w.PodSpec().Containers[i].Name == w.ServingContainer {
			return i
		}
	}
	return -1
}

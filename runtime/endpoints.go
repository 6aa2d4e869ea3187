package runtime

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/podspec"
	"github.com/podgate/podgate/wire"
)

// endpointPort is where traffic for the workload goes: the serving port,
// or the gate's once the gate is injected.
func endpointPort(w *podspec.Workload) (string, int32) {
	if w.IsInjected() {
		return wire.GateTrafficPort(w.Container(wire.GateContainerName))
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

// syncEndpoints writes the workload's EndpointSlice from its pods' states
// (docs/facts.md §3): serving = pod Ready, terminating = deletion started, ready =
// serving and not terminating. Terminating pods stay in the slice;
// finished (Succeeded/Failed) pods leave it.
func (wl *workload) syncEndpoints() {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	portName, port := endpointPort(wl.w)
	proto := corev1.ProtocolTCP
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:      wl.naming.serviceName,
			Namespace: wl.w.Namespace,
			Labels:    wl.sliceLabels(),
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port, Protocol: &proto}},
		Endpoints:   []discoveryv1.Endpoint{},
	}
	node := wl.a.opts.NodeName
	readyCount := 0
	for _, name := range wl.endpointNamesLocked() {
		st := wl.endpoints[name]
		if st.terminal || st.ip == "" {
			continue
		}
		serving, terminating := st.ready, st.terminating
		ready := serving && !terminating
		if ready {
			readyCount++
		}
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{st.ip},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: wl.w.Namespace, Name: name, UID: st.uid},
			NodeName:   &node,
		})
	}
	// Written under wl.mu so that two pods' updates reach the store in the
	// order their states were recorded.
	if _, err := wl.a.store.EndpointSlices.Put(slice); err != nil {
		wl.a.log.Warn("publish endpoints", "workload", wl.w.ID(), "err", err)
	}
	wl.syncServiceLocked(readyCount)
}

func (wl *workload) sliceLabels() map[string]string {
	l := map[string]string{
		LabelServiceName: wl.naming.serviceName,
		LabelManagedBy:   managedBy,
	}
	if k := wl.w.Knative; k != nil {
		l[podspec.LabelKnativeService] = wl.w.Name
		l[podspec.LabelKnativeConfiguration] = wl.w.Name
		l[podspec.LabelKnativeRevision] = k.RevisionName
	}
	return l
}

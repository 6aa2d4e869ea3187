package contract

import corev1 "k8s.io/api/core/v1"

// GateContainer is the pod's gate container (an init container when it
// runs as a native sidecar), or nil in a pod without a gate.
func GateContainer(spec *corev1.PodSpec) *corev1.Container {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			if cs[i].Name == GateContainerName {
				return &cs[i]
			}
		}
	}
	return nil
}

// GateTrafficPort is the port a gate container serves traffic and health
// checks on, as it declares it (its first port, by the injector's order),
// and that port's name; GatePort and "http" when it declares none.
func GateTrafficPort(gate *corev1.Container) (name string, port int32) {
	if gate != nil && len(gate.Ports) > 0 {
		return gate.Ports[0].Name, gate.Ports[0].ContainerPort
	}
	return "http", GatePort
}

// GateAdminPortOf is the admin port a gate container declares (named
// GateAdminPortName), 0 when it declares none or gate is nil.
func GateAdminPortOf(gate *corev1.Container) int32 {
	if gate == nil {
		return 0
	}
	for _, p := range gate.Ports {
		if p.Name == GateAdminPortName {
			return p.ContainerPort
		}
	}
	return 0
}

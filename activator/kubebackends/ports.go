package kubebackends

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// HTTPPortName is the Service port a pod without a gate is served on when
// the Service has several: the name Kubernetes users give the HTTP port
// (and Knative's, and podgate's gate's).
const HTTPPortName = "http"

// A pod without a gate is reached on the Service's own target port. The
// EndpointSlice controller has resolved it already, as kube-proxy uses
// it: each slice lists, per Service port (by the Service port's name),
// the port its endpoints serve it on — a numeric targetPort as written, a
// named one looked up in the pod's container ports (a pod that does not
// declare the name lands in a slice without that port). So the activator
// needs no Service: it picks the Service port by name (servicePort), then
// takes that port's number from the endpoint's own slice (slicePort).

// servicePort picks the Service port to serve HTTP on among the ports
// the Service's slices list: its only TCP port, else the one named http.
// Several TCP ports and none named http, or none at all, cannot be
// routed: the error says why, in words a Service's author acts on.
func servicePort(sls []*discoveryv1.EndpointSlice) (string, error) {
	var names []string
	for _, sl := range sls {
		for _, p := range sl.Ports {
			if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
				continue // HTTP is TCP (UDP, SCTP are not routable here)
			}
			name := ""
			if p.Name != nil {
				name = *p.Name
			}
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	switch {
	case len(names) == 1:
		return names[0], nil
	case len(names) == 0:
		return "", fmt.Errorf("its EndpointSlices list no TCP port (a Service without ports, or only UDP/SCTP ones): give the Service a port, or inject the pods with the gate")
	case slices.Contains(names, HTTPPortName):
		return HTTPPortName, nil
	}
	slices.Sort(names)
	return "", fmt.Errorf("it has %d ports (%s) and none is named %q: name %q the port that serves HTTP", len(names), strings.Join(names, ", "), HTTPPortName, HTTPPortName)
}

// slicePort is the port number sl's endpoints serve Service port name on
// (0: the slice lists no such TCP port, or one without a number).
func slicePort(sl *discoveryv1.EndpointSlice, name string) int32 {
	for _, p := range sl.Ports {
		if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
			continue
		}
		n := ""
		if p.Name != nil {
			n = *p.Name
		}
		if n == name && p.Port != nil && *p.Port > 0 {
			return *p.Port
		}
	}
	return 0
}

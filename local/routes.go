package local

import (
	"fmt"
	"io"
	"time"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/activator/server"
	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
)

// CheckRoutes reports what would keep the front door from routing the
// workloads that get the gate (routed): two of them under one host, or a
// --service-port that names no routed workload, several, one that has a
// port already, or a port given twice. It returns the flags with their
// workload's namespace. It takes no address: it runs before anything
// listens.
func CheckRoutes(routed []*workload.Workload, domain string, flags []server.ServicePort) ([]server.ServicePort, error) {
	router := activator.NewRouter(domain)
	hosts := map[string]*workload.Workload{}
	for _, w := range routed {
		host := router.Host(w.Namespace, w.Name)
		if other, ok := hosts[host]; ok {
			return nil, fmt.Errorf("%s: %s and %s: %s would share the front door host %s: rename one",
				other.Source, other.ID(), w.Source, w.ID(), host)
		}
		hosts[host] = w
	}
	taken := map[int]string{}
	given := map[int]string{}
	var out []server.ServicePort
	for _, p := range flags {
		var found []int
		for i, w := range routed {
			if w.Name == p.Name && (p.Namespace == "" || p.Namespace == w.Namespace) {
				found = append(found, i)
			}
		}
		switch {
		case len(found) == 0:
			return nil, fmt.Errorf("--service-port %s: no workload named %s reachable through the front door (with the gate); check the name and namespace", p.Raw, p.Name)
		case len(found) > 1:
			return nil, fmt.Errorf("--service-port %s: %d workloads are named %s; give the namespace, e.g. --service-port %s/%s=%d", p.Raw, len(found), p.Name, routed[found[0]].Namespace, p.Name, p.Port)
		}
		if other, ok := taken[p.Port]; ok && p.Port != 0 {
			return nil, fmt.Errorf("--service-port %s: port %d is already given to %s", p.Raw, p.Port, other)
		}
		taken[p.Port] = p.Raw
		i := found[0]
		if other, ok := given[i]; ok {
			return nil, fmt.Errorf("--service-port %s: %s already has a port (--service-port %s)", p.Raw, routed[i].ID(), other)
		}
		given[i] = p.Raw
		p.Namespace = routed[i].Namespace
		out = append(out, p)
	}
	return out, nil
}

// frontDoorRoutes are the workloads the front door routes to: those with
// the gate (the activator talks only to gates; it health-checks them the
// way Knative's activator checks queue-proxy). The others are named on
// stderr.
func frontDoorRoutes(workloads []*workload.Workload, stderr io.Writer) []*workload.Workload {
	var routed []*workload.Workload
	for _, w := range workloads {
		if !w.IsInjected() {
			fmt.Fprintf(stderr, "podgate: no front door route for %s: it runs without the gate (--no-gate)\n", w.ID())
			continue
		}
		routed = append(routed, w)
	}
	return routed
}

// serverRoute is a routed workload as the activator server takes it.
func serverRoute(w *workload.Workload) server.Route {
	r := server.Route{Namespace: w.Namespace, Name: w.Name, Label: w.ID()}
	// The kubernetes.io/service-name of its EndpointSlices, as the
	// runtime writes it: the revision for a Knative Service (its pods
	// belong to the revision, not the service), the workload's own name
	// otherwise.
	if k := w.Knative; k != nil {
		if k.RevisionName != "" {
			r.Service = k.RevisionName
		}
		r.ContainerConcurrency = int(k.ContainerConcurrency)
		if k.TimeoutSeconds > 0 {
			r.RequestTimeout = time.Duration(k.TimeoutSeconds) * time.Second
		}
	}
	// The port the injected gate serves traffic and health checks on, as
	// declared on the gate container.
	_, r.GatePort = contract.GateTrafficPort(w.Container(contract.GateContainerName))
	return r
}

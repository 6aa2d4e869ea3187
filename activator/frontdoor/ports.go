package frontdoor

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	apivalidation "k8s.io/apimachinery/pkg/util/validation"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/admission/workload"
)

// ServicePort is one --service-port [NAMESPACE/]NAME=PORT.
type ServicePort struct {
	Raw             string // as written, for messages
	Namespace, Name string // Namespace empty: any, if the name is unique
	Port            int    // 0: any free port
}

// ParseServicePort reads one --service-port [NAMESPACE/]NAME=PORT as
// written: names that Kubernetes would accept, a port from 0 (any free
// one) to 65535. Which workload it names is CheckRoutes's question, once
// the manifests are loaded.
func ParseServicePort(raw string) (ServicePort, error) {
	ref, portStr, ok := strings.Cut(raw, "=")
	if !ok || ref == "" || portStr == "" {
		return ServicePort{}, fmt.Errorf("--service-port %q: want [NAMESPACE/]NAME=PORT, e.g. --service-port hello=8081", raw)
	}
	p := ServicePort{Raw: raw, Name: ref}
	if ns, name, ok := strings.Cut(ref, "/"); ok {
		p.Namespace, p.Name = ns, name
		if errs := apivalidation.IsDNS1123Label(ns); len(errs) > 0 {
			return ServicePort{}, fmt.Errorf("--service-port %q: namespace %q: %s", raw, ns, strings.Join(errs, "; "))
		}
	}
	if errs := apivalidation.IsDNS1123Subdomain(p.Name); len(errs) > 0 {
		return ServicePort{}, fmt.Errorf("--service-port %q: name %q: %s", raw, p.Name, strings.Join(errs, "; "))
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return ServicePort{}, fmt.Errorf("--service-port %q: port %q: must be a number from 0 (any free port) to 65535", raw, portStr)
	}
	p.Port = port
	return p, nil
}

// matches says whether the flag names w.
func (p ServicePort) matches(w *workload.Workload) bool {
	return w.Name == p.Name && (p.Namespace == "" || p.Namespace == w.Namespace)
}

// CheckRoutes reports what would keep the front door from routing the
// workloads that get the gate (routed): two of them under one host, or a
// --service-port that names no routed workload, several, one that has a
// port already, or a port given twice. For each flag it returns the index
// in routed of its workload. It takes no address: it runs before
// anything listens.
func CheckRoutes(routed []*workload.Workload, domain string, flags []ServicePort) ([]int, error) {
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
	var out []int
	for _, p := range flags {
		var found []int
		for i, w := range routed {
			if p.matches(w) {
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
		out = append(out, i)
	}
	return out, nil
}

// listenServicePorts opens each --service-port on the front door's host
// and serves the named workload's target on it, whatever the Host header:
// for clients that cannot set one.
// index is CheckRoutes' answer: the route of each flag.
func (f *Door) listenServicePorts(flags []ServicePort, index []int, errorLog *log.Logger) error {
	host, _, err := net.SplitHostPort(f.ln.Addr().String())
	if err != nil {
		return err
	}
	for n, p := range flags {
		i := index[n]
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p.Port)))
		if err != nil {
			return fmt.Errorf("--service-port %s: %w", p.Raw, err)
		}
		f.routes[i].port = ln
		srv := &http.Server{Handler: f.targets[i], ReadHeaderTimeout: 10 * time.Second, ErrorLog: errorLog}
		f.listeners = append(f.listeners, listener{ln: ln, srv: srv})
	}
	return nil
}

// closeServicePorts closes the listeners of a front door that never
// started.
func (f *Door) closeServicePorts() {
	for _, l := range f.listeners[1:] {
		_ = l.ln.Close()
	}
}

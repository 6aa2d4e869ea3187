package main

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/podspec"
)

// servicePortFlag is one --service-port [NAMESPACE/]NAME=PORT.
type servicePortFlag struct {
	raw             string
	namespace, name string // namespace empty: any, if the name is unique
	port            int
}

// parseServicePorts checks the flags' syntax; which workload each names is
// checked once the manifests are loaded.
func parseServicePorts(flags []string) ([]servicePortFlag, error) {
	var out []servicePortFlag
	for _, raw := range flags {
		ref, portStr, ok := strings.Cut(raw, "=")
		if !ok || ref == "" || portStr == "" {
			return nil, usageErrorf("--service-port %q: want [NAMESPACE/]NAME=PORT, e.g. --service-port hello=8081", raw)
		}
		p := servicePortFlag{raw: raw, name: ref}
		if ns, name, ok := strings.Cut(ref, "/"); ok {
			p.namespace, p.name = ns, name
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				return nil, usageErrorf("--service-port %q: namespace %q: %s", raw, ns, strings.Join(errs, "; "))
			}
		}
		if errs := validation.IsDNS1123Subdomain(p.name); len(errs) > 0 {
			return nil, usageErrorf("--service-port %q: name %q: %s", raw, p.name, strings.Join(errs, "; "))
		}
		port, err := strconv.Atoi(portStr)
		if err != nil || port < 0 || port > 65535 {
			return nil, usageErrorf("--service-port %q: port %q: must be a number from 0 (any free port) to 65535", raw, portStr)
		}
		p.port = port
		out = append(out, p)
	}
	return out, nil
}

// matches says whether the flag names w.
func (p servicePortFlag) matches(w *podspec.Workload) bool {
	return w.Name == p.name && (p.namespace == "" || p.namespace == w.Namespace)
}

// checkRoutes reports what would keep the front door from routing the
// workloads that get the gate (routed): two of them under one host, or a
// --service-port that names no routed workload, several, one that has a
// port already, or a port given twice. For each flag it returns the index
// in routed of its workload. It takes no address: it runs before
// anything listens.
func checkRoutes(routed []*podspec.Workload, domain string, flags []servicePortFlag) ([]int, error) {
	router := activator.NewRouter(domain)
	hosts := map[string]*podspec.Workload{}
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
			return nil, fmt.Errorf("--service-port %s: no workload named %s reachable through the front door (with the gate); check the name and namespace", p.raw, p.name)
		case len(found) > 1:
			return nil, fmt.Errorf("--service-port %s: %d workloads are named %s; give the namespace, e.g. --service-port %s/%s=%d", p.raw, len(found), p.name, routed[found[0]].Namespace, p.name, p.port)
		}
		if other, ok := taken[p.port]; ok && p.port != 0 {
			return nil, fmt.Errorf("--service-port %s: port %d is already given to %s", p.raw, p.port, other)
		}
		taken[p.port] = p.raw
		i := found[0]
		if other, ok := given[i]; ok {
			return nil, fmt.Errorf("--service-port %s: %s already has a port (--service-port %s)", p.raw, routed[i].ID(), other)
		}
		given[i] = p.raw
		out = append(out, i)
	}
	return out, nil
}

// listenServicePorts opens each --service-port on the front door's host
// and serves the named workload's target on it, whatever the Host header:
// for clients that cannot set one.
// index is checkRoutes' answer: the route of each flag.
func (f *frontDoor) listenServicePorts(flags []servicePortFlag, index []int, errorLog *log.Logger) error {
	host, _, err := net.SplitHostPort(f.ln.Addr().String())
	if err != nil {
		return err
	}
	for n, p := range flags {
		i := index[n]
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p.port)))
		if err != nil {
			return fmt.Errorf("--service-port %s: %w", p.raw, err)
		}
		f.routes[i].port = ln
		srv := &http.Server{Handler: f.targets[i], ReadHeaderTimeout: 10 * time.Second, ErrorLog: errorLog}
		f.listeners = append(f.listeners, frontDoorListener{ln: ln, srv: srv})
	}
	return nil
}

// closeServicePorts closes the listeners of a front door that never
// started.
func (f *frontDoor) closeServicePorts() {
	for _, l := range f.listeners[1:] {
		_ = l.ln.Close()
	}
}

package server

import (
	"fmt"
	"strconv"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/util/validation"
)

// ServicePort is one --service-port [NAMESPACE/]NAME=PORT: a route served
// on a port of its own.
type ServicePort struct {
	Raw string // as written, for messages
	// Namespace and Name name the route. As parsed, an empty Namespace
	// is any, if the name is unique; Config.ServicePorts names it.
	Namespace, Name string
	Port            int // 0: any free port
}

// ParseServicePort reads one --service-port [NAMESPACE/]NAME=PORT as
// written: names that Kubernetes would accept, a port from 0 (any free
// one) to 65535. Which route it names is the caller's question (local.CheckRoutes for
// `podgate run`, once the manifests are loaded).
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

package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	apivalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/probe"
	"github.com/podgate/podgate/probe/prober"
)

type probeKind int

const (
	liveness probeKind = iota
	readiness
	startup
)

// probes validates a container's three probes.
func (v *podValidator) probes(c *corev1.Container, cpath *field.Path, serving bool) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, v.probe(c, c.LivenessProbe, cpath.Child("livenessProbe"), liveness, serving)...)
	errs = append(errs, v.probe(c, c.ReadinessProbe, cpath.Child("readinessProbe"), readiness, serving)...)
	errs = append(errs, v.probe(c, c.StartupProbe, cpath.Child("startupProbe"), startup, serving)...)
	return errs
}

// probe applies the context-free rules of package probe, and those that
// depend on the probe's kind, its container and the workload. Where both
// speak about the same field, the more specific message here wins.
//
// Unlike Knative's webhook, every rule applies to readiness probes too:
// Knative moves HTTP/TCP/gRPC readiness probes into queue-proxy's
// environment, where Kubernetes never validates them (docs/facts.md §4b).
func (v *podValidator) probe(c *corev1.Container, p *corev1.Probe, path *field.Path, kind probeKind, serving bool) field.ErrorList {
	if p == nil {
		return nil
	}
	var mine field.ErrorList
	checked := *p
	if kind == readiness && v.w.Knative != nil && prober.IsAggressive(p) {
		// Knative's aggressive mode: no period, so no timeout or failure
		// threshold either; the context-free rules see legal stand-ins.
		const msg = "must not be set when periodSeconds is 0 (Knative's aggressive probing)"
		if p.TimeoutSeconds != 0 {
			mine = append(mine, field.Forbidden(path.Child("timeoutSeconds"), msg))
		}
		if p.FailureThreshold != 0 {
			mine = append(mine, field.Forbidden(path.Child("failureThreshold"), msg))
		}
		checked.PeriodSeconds, checked.TimeoutSeconds, checked.FailureThreshold = 1, 1, 1
	}
	switch kind {
	case liveness, startup:
		if p.SuccessThreshold > 1 {
			mine = append(mine, field.Invalid(path.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
		}
	case readiness:
		if g := p.TerminationGracePeriodSeconds; g != nil {
			mine = append(mine, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must not be set for readinessProbes"))
		}
	}
	mine = append(mine, v.probePort(c, p, path, serving)...)
	return withSpecific(probe.Validate(&checked, path), mine)
}

// probePort resolves a named port against the container's ports here, at
// admission (Kubernetes checks only the name's syntax and fails at probe
// time; Knative fails late for sidecars). On a Knative sidecar a network
// probe must name its port: only the serving container's probes default
// to the serving port.
func (v *podValidator) probePort(c *corev1.Container, p *corev1.Probe, path *field.Path, serving bool) field.ErrorList {
	var port intstr.IntOrString
	var ppath *field.Path
	switch {
	case p.HTTPGet != nil:
		port, ppath = p.HTTPGet.Port, path.Child("httpGet", "port")
	case p.TCPSocket != nil:
		port, ppath = p.TCPSocket.Port, path.Child("tcpSocket", "port")
	case p.GRPC != nil:
		port, ppath = intstr.FromInt32(p.GRPC.Port), path.Child("grpc", "port")
	default:
		return nil
	}
	if port.Type == intstr.Int && port.IntVal == 0 && v.w.Knative != nil && !serving {
		return field.ErrorList{field.Required(ppath,
			fmt.Sprintf("container %q is not the serving container: its probes must name a port (only the serving container's default to %d)",
				c.Name, v.w.ServingPort))}
	}
	if port.Type != intstr.String || port.StrVal == "" || len(apivalidation.IsValidPortName(port.StrVal)) > 0 {
		return nil // numbers and malformed names are package probe's to judge
	}
	if !hasNamedPort(c, port.StrVal) {
		return field.ErrorList{field.Invalid(ppath, port.StrVal,
			fmt.Sprintf("no such named port on container %q (%s)", c.Name, describePorts(c.Ports)))}
	}
	return nil
}

// hasNamedPort reports whether c declares a port named name.
func hasNamedPort(c *corev1.Container, name string) bool {
	for _, p := range c.Ports {
		if p.Name == name {
			return true
		}
	}
	return false
}

// withSpecific appends the specific errors to the general ones, dropping
// general errors about a field a specific one already reports.
func withSpecific(general, specific field.ErrorList) field.ErrorList {
	seen := sets.New[string]()
	for _, e := range specific {
		seen.Insert(e.Field)
	}
	var out field.ErrorList
	for _, e := range general {
		if !seen.Has(e.Field) {
			out = append(out, e)
		}
	}
	return append(out, specific...)
}

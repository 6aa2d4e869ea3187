package workload

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podgate/podgate/probe/prober"
)

// Kubernetes' pod defaults that matter to podgate.
const defaultTerminationGracePeriodSeconds = 30

// setDefaults applies the defaults the API server applies to a pod, and for
// a Knative Service first those Knative's webhook and reconciler apply.
// Defaulting never removes information validation needs: values that are
// wrong stay as they are, to be reported.
func setDefaults(w *Workload) {
	if w.Namespace == "" {
		w.Namespace = "default"
	}
	spec := w.PodSpec()
	if w.Knative != nil {
		setKnativeDefaults(w)
	} else {
		pickServingContainer(w)
	}

	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.TerminationGracePeriodSeconds == nil {
		g := int64(defaultTerminationGracePeriodSeconds)
		spec.TerminationGracePeriodSeconds = &g
	}
	for i := range spec.InitContainers {
		setContainerDefaults(&spec.InitContainers[i], false)
	}
	for i := range spec.Containers {
		setContainerDefaults(&spec.Containers[i], w.Knative != nil)
	}
}

func setContainerDefaults(c *corev1.Container, knative bool) {
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	prober.SetDefaults(c.LivenessProbe)
	prober.SetDefaults(c.StartupProbe)
	if knative && c.ReadinessProbe != nil && c.ReadinessProbe.PeriodSeconds == 0 {
		setAggressiveDefaults(c.ReadinessProbe)
		return
	}
	prober.SetDefaults(c.ReadinessProbe)
}

// setAggressiveDefaults defaults a Knative readiness probe with
// periodSeconds 0 (queue-proxy's aggressive mode: retry every few
// milliseconds until ready). Kubernetes would turn the 0 into 10, and with
// it the mode; Knative keeps the period, timeout and failure threshold
// unset, and validation forbids setting the latter two.
func setAggressiveDefaults(p *corev1.Probe) {
	timeout, failure := p.TimeoutSeconds, p.FailureThreshold
	prober.SetDefaults(p)
	p.PeriodSeconds, p.TimeoutSeconds, p.FailureThreshold = 0, timeout, failure
}

// fillServingProbePorts gives the serving container's network probes the
// serving port when they name none, as Knative does when it builds the
// pod: readiness (queue-proxy probes the user port) and liveness (the
// reconciler fills it). Knative forgets the startup probe, so the pod it
// generates is rejected; podgate fills that one too.
func fillServingProbePorts(w *Workload) {
	c := w.Container(w.ServingContainer)
	if c == nil {
		return
	}
	for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
		if p == nil {
			continue
		}
		port := intstr.FromInt32(w.ServingPort)
		switch {
		case p.HTTPGet != nil && isZeroPort(p.HTTPGet.Port):
			p.HTTPGet.Port = port
		case p.TCPSocket != nil && isZeroPort(p.TCPSocket.Port):
			p.TCPSocket.Port = port
		case p.GRPC != nil && p.GRPC.Port == 0:
			p.GRPC.Port = w.ServingPort
		}
	}
}

func isZeroPort(p intstr.IntOrString) bool {
	return p.Type == intstr.Int && p.IntVal == 0
}

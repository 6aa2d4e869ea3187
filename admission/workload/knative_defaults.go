package workload

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// Knative's scale annotations on the revision template.
const (
	AnnotationInitialScale       = "autoscaling.knative.dev/initial-scale"
	AnnotationInitialScaleLegacy = "autoscaling.knative.dev/initialScale"
	AnnotationMinScale           = "autoscaling.knative.dev/min-scale"
	AnnotationMinScaleLegacy     = "autoscaling.knative.dev/minScale"
)

// setKnativeDefaults applies what Knative's webhook (revision defaults) and
// its reconciler (deployment and queue-proxy generation) fill in, before
// the Kubernetes defaults run.
func setKnativeDefaults(w *Workload) {
	k, spec := w.Knative, w.PodSpec()
	if k.TimeoutSeconds == 0 {
		k.TimeoutSeconds = knativeDefaultTimeoutSeconds
	}
	k.RevisionName = w.Template.Name
	if k.RevisionName == "" {
		k.RevisionName = w.Name + "-00001"
	}
	// The reconciler makes the revision timeout the pod's grace period.
	if spec.TerminationGracePeriodSeconds == nil && k.TimeoutSeconds > 0 {
		g := k.TimeoutSeconds
		spec.TerminationGracePeriodSeconds = &g
	}
	w.Replicas = knativeReplicas(w.Template.Annotations)

	defaultContainerNames(spec)
	pickServingContainer(w)
	// An injected pod's serving readiness probe lives in the gate; adding
	// Knative's default back would probe twice.
	if i := w.ServingIndex(); i >= 0 && !FindGate(spec).Found() {
		c := &spec.Containers[i]
		// The reconciler replaces the serving container's ports with the
		// one user port; a port without a number gets the default.
		if len(c.Ports) > 0 && c.Ports[0].ContainerPort == 0 {
			c.Ports[0].ContainerPort = w.ServingPort
		}
		if c.ReadinessProbe == nil {
			c.ReadinessProbe = &corev1.Probe{}
		}
		if p := c.ReadinessProbe; p.HTTPGet == nil && p.TCPSocket == nil && p.Exec == nil && p.GRPC == nil {
			p.TCPSocket = &corev1.TCPSocketAction{}
		}
	}
	for i := range spec.Containers {
		knativeReadinessDefaults(spec.Containers[i].ReadinessProbe)
	}
	fillServingProbePorts(w)
}

// knativeReadinessDefaults: successThreshold 1, and unless the probe is
// aggressive (periodSeconds 0) Kubernetes' failureThreshold and timeout.
func knativeReadinessDefaults(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.PeriodSeconds != 0 {
		if p.FailureThreshold == 0 {
			p.FailureThreshold = 3
		}
		if p.TimeoutSeconds == 0 {
			p.TimeoutSeconds = 1
		}
	}
}

// defaultContainerNames names unnamed containers as Knative does:
// user-container for a single one, user-container-N (and init-container,
// init-container-N) otherwise, skipping names already taken.
func defaultContainerNames(spec *corev1.PodSpec) {
	taken := map[string]bool{}
	for _, c := range spec.Containers {
		taken[c.Name] = true
	}
	for _, c := range spec.InitContainers {
		taken[c.Name] = true
	}
	name := func(cs []corev1.Container, base string) {
		next := 0
		for i := range cs {
			if cs[i].Name != "" {
				continue
			}
			n := base
			if len(cs) > 1 || taken[n] {
				for {
					n = fmt.Sprintf("%s-%d", base, next)
					next++
					if !taken[n] {
						break
					}
				}
			}
			cs[i].Name = n
			taken[n] = true
		}
	}
	name(spec.Containers, knativeUserContainerName)
	name(spec.InitContainers, knativeInitContainerName)
}

// knativeReplicas is the initial scale: the initial-scale annotation
// (default 1), raised to min-scale. Malformed values are left to
// validation and count as unset here.
func knativeReplicas(ann map[string]string) int32 {
	n := int32(1)
	if v, ok := scaleAnnotation(ann, AnnotationInitialScale, AnnotationInitialScaleLegacy); ok {
		n = v
	}
	if v, ok := scaleAnnotation(ann, AnnotationMinScale, AnnotationMinScaleLegacy); ok && v > n {
		n = v
	}
	return n
}

func scaleAnnotation(ann map[string]string, keys ...string) (int32, bool) {
	for _, k := range keys {
		if s, ok := ann[k]; ok {
			v, err := strconv.ParseInt(s, 10, 32)
			if err != nil || v < 0 {
				return 0, false
			}
			return int32(v), true
		}
	}
	return 0, false
}

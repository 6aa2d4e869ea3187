package validation

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	apivalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
)

// gatePorts are the ports the gate listens on inside every injected pod;
// a container of the same pod cannot have them (shared network namespace
// on Kubernetes, shared pod IP locally).
var gatePorts = map[int32]string{
	contract.GatePort:           "traffic and health",
	contract.GateAdminPort:      "admin",
	contract.GateMetricsPort:    "metrics",
	contract.GateAutoscalerPort: "autoscaler statistics",
}

// podValidator validates a pod spec with the Kubernetes rules plus
// podgate's own (reserved names and ports, named probe ports resolved).
type podValidator struct {
	w    *workload.Workload
	spec *corev1.PodSpec
	path *field.Path
	gate workload.GateRef // the injected gate, if any
}

func (v *podValidator) validate() field.ErrorList {
	var errs field.ErrorList
	spec, path := v.spec, v.path
	if len(spec.Containers) == 0 || (len(spec.Containers) == 1 && v.gate.IsContainer(0)) {
		errs = append(errs, field.Required(path.Child("containers"), "a pod needs at least one container"))
	}
	switch spec.RestartPolicy {
	case corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
	default:
		errs = append(errs, field.NotSupported(path.Child("restartPolicy"), spec.RestartPolicy,
			[]corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	}
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must be greater than or equal to 0"))
	}
	errs = append(errs, v.names()...)
	errs = append(errs, v.validatePortEnv()...)
	for i := range spec.InitContainers {
		if v.gate.IsInit(i) {
			continue
		}
		errs = append(errs, v.initContainer(i)...)
	}
	for i := range spec.Containers {
		if v.gate.IsContainer(i) {
			continue
		}
		c := &spec.Containers[i]
		cpath := path.Child("containers").Index(i)
		errs = append(errs, v.container(c, cpath)...)
		if c.RestartPolicy != nil {
			errs = append(errs, field.Forbidden(cpath.Child("restartPolicy"),
				"may only be set on init containers (restartPolicy: Always makes a sidecar)"))
		}
		errs = append(errs, v.probes(c, cpath, i == v.w.ServingIndex())...)
	}
	return errs
}

// names: required, DNS labels, unique across containers and init
// containers, and not the gate's.
func (v *podValidator) names() field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	check := func(c *corev1.Container, p *field.Path, isGate bool) {
		np := p.Child("name")
		switch {
		case c.Name == "":
			errs = append(errs, field.Required(np, ""))
			return
		case seen.Has(c.Name):
			errs = append(errs, field.Duplicate(np, c.Name))
			return
		}
		seen.Insert(c.Name)
		for _, msg := range apivalidation.IsDNS1123Label(c.Name) {
			errs = append(errs, field.Invalid(np, c.Name, msg))
		}
		if c.Name == contract.GateContainerName && !isGate {
			errs = append(errs, field.Invalid(np, c.Name, "reserved for the gate container podgate injects"))
		}
	}
	for i := range v.spec.InitContainers {
		check(&v.spec.InitContainers[i], v.path.Child("initContainers").Index(i), v.gate.IsInit(i))
	}
	for i := range v.spec.Containers {
		check(&v.spec.Containers[i], v.path.Child("containers").Index(i), v.gate.IsContainer(i))
	}
	return errs
}

// initContainer: a plain init container runs to completion, so probes and
// lifecycle hooks make no sense on it; restartPolicy: Always turns it into
// a native sidecar (KEP-753), which may have them. Errors are reported
// under initContainers[i] (Knative reports them under containers[i]).
func (v *podValidator) initContainer(i int) field.ErrorList {
	c := &v.spec.InitContainers[i]
	p := v.path.Child("initContainers").Index(i)
	errs := v.container(c, p)
	sidecar := false
	if rp := c.RestartPolicy; rp != nil {
		if *rp == corev1.ContainerRestartPolicyAlways {
			sidecar = true
		} else {
			errs = append(errs, field.NotSupported(p.Child("restartPolicy"), *rp,
				[]corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways}))
		}
	}
	if sidecar {
		return append(errs, v.probes(c, p, false)...)
	}
	const msg = "may not be set for init containers without restartPolicy=Always"
	if c.Lifecycle != nil {
		errs = append(errs, field.Forbidden(p.Child("lifecycle"), msg))
	}
	if c.LivenessProbe != nil {
		errs = append(errs, field.Forbidden(p.Child("livenessProbe"), msg))
	}
	if c.ReadinessProbe != nil {
		errs = append(errs, field.Forbidden(p.Child("readinessProbe"), msg))
	}
	if c.StartupProbe != nil {
		errs = append(errs, field.Forbidden(p.Child("startupProbe"), msg))
	}
	return errs
}

// container: image, ports and environment.
func (v *podValidator) container(c *corev1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	}
	errs = append(errs, v.ports(c, p.Child("ports"))...)
	for i, e := range c.Env {
		if e.Name == "" {
			errs = append(errs, field.Required(p.Child("env").Index(i).Child("name"), ""))
		}
	}
	return errs
}

func (v *podValidator) ports(c *corev1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range c.Ports {
		pp := p.Index(i)
		for _, msg := range apivalidation.IsValidPortNum(int(port.ContainerPort)) {
			errs = append(errs, field.Invalid(pp.Child("containerPort"), port.ContainerPort, msg))
		}
		if port.Name != "" {
			if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(pp.Child("name"), port.Name))
			}
			names.Insert(port.Name)
			for _, msg := range apivalidation.IsValidPortName(port.Name) {
				errs = append(errs, field.Invalid(pp.Child("name"), port.Name, msg))
			}
		}
		switch port.Protocol {
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			errs = append(errs, field.NotSupported(pp.Child("protocol"), port.Protocol,
				[]corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}))
		}
		if role, ok := gatePorts[port.ContainerPort]; ok && port.Protocol == corev1.ProtocolTCP {
			errs = append(errs, field.Invalid(pp.Child("containerPort"), port.ContainerPort,
				fmt.Sprintf("reserved: the gate listens on %d (%s) in every pod", port.ContainerPort, role)))
		}
	}
	return errs
}

// envValue finds a literal environment variable of a container.
func envValue(c *corev1.Container, name string) (string, int, bool) {
	for i, e := range c.Env {
		if e.Name == name {
			return e.Value, i, true
		}
	}
	return "", -1, false
}

// validatePortEnv: podgate sets $PORT on the serving container of a Pod
// or Deployment; a different value the user set would be overwritten.
func (v *podValidator) validatePortEnv() field.ErrorList {
	i := v.w.ServingIndex()
	if i < 0 || v.w.Knative != nil {
		return nil
	}
	c := &v.spec.Containers[i]
	val, j, ok := envValue(c, "PORT")
	if !ok || val == strconv.Itoa(int(v.w.ServingPort)) {
		return nil
	}
	return field.ErrorList{field.Invalid(v.path.Child("containers").Index(i).Child("env").Index(j).Child("value"), val,
		fmt.Sprintf("podgate sets PORT to the serving port %d of container %q", v.w.ServingPort, c.Name))}
}

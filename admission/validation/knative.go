package validation

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
)

// Knative's reserved ports (queue-proxy's traffic, h2c, admin, metrics and
// profiling ports) and the port names it gives a meaning.
var (
	knativeReservedPorts = map[int32]bool{contract.GatePort: true, 8013: true, contract.GateAdminPort: true, contract.GateAutoscalerPort: true, contract.GateMetricsPort: true, 8008: true}
	knativePortNames     = []string{"", "h2c", "http1"}
	// knativeReservedEnv are set by Knative on every container; PORT also,
	// on the serving container only.
	knativeReservedEnv = []string{"K_SERVICE", "K_CONFIGURATION", "K_REVISION"}
)

// Knative's limits (config-defaults), as shipped.
const (
	knativeMaxTimeoutSeconds       = 600
	knativeMaxContainerConcurrency = 1000
)

// validateKnative applies Knative Serving's webhook rules that concern
// podgate: one serving port, the revision settings, reserved names.
// Multi-container probing is always on; exec probes on sidecars need no
// port; podgate's other differences are in docs/admission.md.
func validateKnative(w *workload.Workload, v *podValidator) field.ErrorList {
	var errs field.ErrorList
	k, spec, path := w.Knative, w.PodSpec(), w.SpecPath()
	tmeta := field.NewPath("spec", "template", "metadata")

	if k.TimeoutSeconds < 0 || k.TimeoutSeconds > knativeMaxTimeoutSeconds {
		errs = append(errs, field.Invalid(path.Child("timeoutSeconds"), k.TimeoutSeconds,
			fmt.Sprintf("must be between 0 and %d (Knative's max-revision-timeout-seconds)", knativeMaxTimeoutSeconds)))
	}
	if cc := k.ContainerConcurrency; cc < 0 || cc > knativeMaxContainerConcurrency {
		errs = append(errs, field.Invalid(path.Child("containerConcurrency"), cc,
			fmt.Sprintf("must be between 0 (no limit) and %d", knativeMaxContainerConcurrency)))
	}
	if name := w.Template.Name; name != "" && !strings.HasPrefix(name, w.Name+"-") {
		errs = append(errs, field.Invalid(tmeta.Child("name"), name,
			fmt.Sprintf("a revision name must start with the Service's name and a dash (%q)", w.Name+"-")))
	}
	errs = append(errs, validateScaleAnnotations(w.Template.Annotations, tmeta.Child("annotations"))...)
	errs = append(errs, validateServingPort(w, v)...)

	for i := range spec.Containers {
		if v.gate.IsContainer(i) {
			continue
		}
		c := &spec.Containers[i]
		cpath := path.Child("containers").Index(i)
		if c.Name == "queue-proxy" {
			errs = append(errs, field.Invalid(cpath.Child("name"), c.Name, "reserved for Knative's queue-proxy"))
		}
		if v.gate.Found() {
			continue // the injector set the reserved variables
		}
		reserved := knativeReservedEnv
		if i == w.ServingIndex() {
			reserved = append([]string{"PORT"}, reserved...)
		}
		for _, name := range reserved {
			if _, j, ok := envValue(c, name); ok {
				errs = append(errs, field.Invalid(cpath.Child("env").Index(j).Child("name"), name, "reserved: Knative sets it"))
			}
		}
	}
	return errs
}

// validateServingPort: a Knative Service declares exactly one port, on the
// container that serves traffic; with one container it may declare none.
func validateServingPort(w *workload.Workload, v *podValidator) field.ErrorList {
	var errs field.ErrorList
	spec, path := w.PodSpec(), w.SpecPath()
	count, users := 0, 0
	for i := range spec.Containers {
		if v.gate.IsContainer(i) {
			continue
		}
		users++
		for j, port := range spec.Containers[i].Ports {
			count++
			pp := path.Child("containers").Index(i).Child("ports").Index(j)
			if count > 1 {
				errs = append(errs, field.Invalid(pp, port.ContainerPort,
					"more than one container port is set: a Knative Service declares exactly one, on its serving container"))
				continue
			}
			if !contains(knativePortNames, port.Name) {
				errs = append(errs, field.NotSupported(pp.Child("name"), port.Name, knativePortNames))
			}
			if port.Protocol != corev1.ProtocolTCP {
				errs = append(errs, field.NotSupported(pp.Child("protocol"), port.Protocol, []corev1.Protocol{corev1.ProtocolTCP}))
			}
			if knativeReservedPorts[port.ContainerPort] && gatePorts[port.ContainerPort] == "" {
				errs = append(errs, field.Invalid(pp.Child("containerPort"), port.ContainerPort, "reserved by Knative's queue-proxy"))
			}
		}
	}
	if count == 0 && users > 1 {
		errs = append(errs, field.Required(path.Child("containers"),
			"with several containers, exactly one must declare a port: the serving container"))
	}
	return errs
}

func validateScaleAnnotations(ann map[string]string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, key := range []string{workload.AnnotationInitialScale, workload.AnnotationInitialScaleLegacy, workload.AnnotationMinScale, workload.AnnotationMinScaleLegacy} {
		s, ok := ann[key]
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(s, 10, 32); err != nil || n < 0 {
			errs = append(errs, field.Invalid(path.Key(key), s, "must be a whole number >= 0"))
		}
	}
	return errs
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

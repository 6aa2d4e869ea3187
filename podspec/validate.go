package podspec

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/gateenv"
	"github.com/podgate/podgate/wire"
)

// Validate checks a defaulted workload (as Load returns it) against the
// rules of the API server and, for a Knative Service, of Knative's webhook,
// with podgate's deliberate differences (docs/admission.md). It returns
// every problem at once, each with its field path in the manifest.
//
// An already injected workload validates too: the gate container and the
// variables the injector set are recognised and left out.
func Validate(w *Workload) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateMeta(w)...)
	if w.Kind == KindDeployment {
		errs = append(errs, validateDeployment(w)...)
	}
	v := &podValidator{w: w, spec: w.PodSpec(), path: w.SpecPath(), gate: findGate(w.PodSpec())}
	errs = append(errs, v.validate()...)
	if w.Knative != nil {
		errs = append(errs, validateKnative(w, v)...)
	}
	return errs
}

func validateMeta(w *Workload) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	switch {
	case w.Name == "" && w.generateName() != "":
		errs = append(errs, field.Required(meta.Child("name"), "podgate needs a fixed name; generateName is not supported"))
	case w.Name == "":
		errs = append(errs, field.Required(meta.Child("name"), ""))
	case w.Kind == KindService:
		// Knative derives revision and host names from it: a DNS label.
		for _, msg := range validation.IsDNS1123Label(w.Name) {
			errs = append(errs, field.Invalid(meta.Child("name"), w.Name, msg))
		}
	default:
		for _, msg := range validation.IsDNS1123Subdomain(w.Name) {
			errs = append(errs, field.Invalid(meta.Child("name"), w.Name, msg))
		}
	}
	for _, msg := range validation.IsDNS1123Label(w.Namespace) {
		errs = append(errs, field.Invalid(meta.Child("namespace"), w.Namespace, msg))
	}
	errs = append(errs, metavalidation.ValidateLabels(w.Labels, meta.Child("labels"))...)
	if w.Kind != KindPod {
		tmeta := field.NewPath("spec", "template", "metadata")
		errs = append(errs, metavalidation.ValidateLabels(w.Template.Labels, tmeta.Child("labels"))...)
	}
	return errs
}

func validateDeployment(w *Workload) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if w.Replicas < 0 {
		errs = append(errs, field.Invalid(spec.Child("replicas"), w.Replicas, "must be greater than or equal to 0"))
	}
	var sel *metav1.LabelSelector
	if d, ok := w.object.(*appsv1.Deployment); ok {
		sel = d.Spec.Selector
	}
	if sel == nil {
		errs = append(errs, field.Required(spec.Child("selector"), ""))
	} else {
		errs = append(errs, metavalidation.ValidateLabelSelector(sel, metavalidation.LabelSelectorValidationOptions{}, spec.Child("selector"))...)
		s, err := metav1.LabelSelectorAsSelector(sel)
		switch {
		case err != nil:
			// Reported by ValidateLabelSelector above.
		case s.Empty():
			errs = append(errs, field.Invalid(spec.Child("selector"), sel, "empty selector is invalid for deployment"))
		case !s.Matches(labels.Set(w.Template.Labels)):
			errs = append(errs, field.Invalid(spec.Child("template", "metadata", "labels"), w.Template.Labels,
				"`selector` does not match template `labels`"))
		}
	}
	if rp := w.PodSpec().RestartPolicy; rp != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(w.SpecPath().Child("restartPolicy"), rp,
			[]corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	return errs
}

// gateRef locates the gate of an injected pod: a native sidecar among the
// init containers (the default), or a regular container.
type gateRef struct {
	init  bool // among spec.initContainers
	index int  // -1: no gate
}

func (g gateRef) found() bool { return g.index >= 0 }

// isContainer says whether spec.containers[i] is the gate.
func (g gateRef) isContainer(i int) bool { return !g.init && g.index == i }

// isInit says whether spec.initContainers[i] is the gate.
func (g gateRef) isInit(i int) bool { return g.init && g.index == i }

// findGate finds the gate container of an injected pod: named podgate and
// configured by the injector (it always writes the status source). A user
// container merely named podgate is not the gate.
func findGate(spec *corev1.PodSpec) gateRef {
	isGate := func(c *corev1.Container) bool {
		if c.Name != wire.GateContainerName {
			return false
		}
		for _, e := range c.Env {
			if e.Name == gateenv.EnvStatusSource {
				return true
			}
		}
		return false
	}
	for i := range spec.InitContainers {
		if isGate(&spec.InitContainers[i]) {
			return gateRef{init: true, index: i}
		}
	}
	for i := range spec.Containers {
		if isGate(&spec.Containers[i]) {
			return gateRef{index: i}
		}
	}
	return gateRef{index: -1}
}

// IsInjected reports whether the workload's pod already carries the gate.
func (w *Workload) IsInjected() bool { return findGate(w.PodSpec()).found() }

func describePorts(ports []corev1.ContainerPort) string {
	var names []string
	for _, p := range ports {
		if p.Name != "" {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return "it declares no named ports"
	}
	return "declared: " + strings.Join(names, ", ")
}

// generateName is the manifest's metadata.generateName.
func (w *Workload) generateName() string {
	switch o := w.object.(type) {
	case *corev1.Pod:
		return o.GenerateName
	case *appsv1.Deployment:
		return o.GenerateName
	case *Service:
		return o.GenerateName
	}
	return ""
}

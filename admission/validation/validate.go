package validation

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	apivalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
)

// Validate checks a defaulted workload (as Load returns it) against the
// rules of the API server and, for a Knative Service, of Knative's webhook,
// with podgate's deliberate differences (docs/admission.md). It returns
// every problem at once, each with its field path in the manifest.
//
// An already injected workload validates too: the gate container and the
// variables the injector set are recognised and left out.
func Validate(w *workload.Workload) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateMeta(w)...)
	errs = append(errs, validateDrainQuietPeriod(w)...)
	if w.Kind == workload.KindDeployment {
		errs = append(errs, validateDeployment(w)...)
	}
	v := &podValidator{w: w, spec: w.PodSpec(), path: w.SpecPath(), gate: workload.FindGate(w.PodSpec())}
	errs = append(errs, v.validate()...)
	errs = append(errs, validateExcludedContainers(w, v)...)
	if w.Knative != nil {
		errs = append(errs, validateKnative(w, v)...)
	}
	return errs
}

func validateMeta(w *workload.Workload) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	switch {
	case w.Name == "" && generateName(w) != "":
		errs = append(errs, field.Required(meta.Child("name"), "podgate needs a fixed name; generateName is not supported"))
	case w.Name == "":
		errs = append(errs, field.Required(meta.Child("name"), ""))
	case w.Kind == workload.KindService:
		// Knative derives revision and host names from it: a DNS label.
		for _, msg := range apivalidation.IsDNS1123Label(w.Name) {
			errs = append(errs, field.Invalid(meta.Child("name"), w.Name, msg))
		}
	default:
		for _, msg := range apivalidation.IsDNS1123Subdomain(w.Name) {
			errs = append(errs, field.Invalid(meta.Child("name"), w.Name, msg))
		}
	}
	for _, msg := range apivalidation.IsDNS1123Label(w.Namespace) {
		errs = append(errs, field.Invalid(meta.Child("namespace"), w.Namespace, msg))
	}
	errs = append(errs, metavalidation.ValidateLabels(w.Labels, meta.Child("labels"))...)
	if w.Kind != workload.KindPod {
		tmeta := field.NewPath("spec", "template", "metadata")
		errs = append(errs, metavalidation.ValidateLabels(w.Template.Labels, tmeta.Child("labels"))...)
	}
	return errs
}

// validateDrainQuietPeriod checks the pod's podgate.dev/drain-quiet-period
// annotation: a non-negative duration shorter than the pod's grace period
// (the drain runs inside it).
func validateDrainQuietPeriod(w *workload.Workload) field.ErrorList {
	v, ok := w.Template.Annotations[contract.AnnotationDrainQuietPeriod]
	if !ok {
		return nil
	}
	path := field.NewPath("metadata")
	if w.Kind != workload.KindPod {
		path = field.NewPath("spec", "template", "metadata")
	}
	path = path.Child("annotations").Key(contract.AnnotationDrainQuietPeriod)
	quiet, err := contract.ParseDrainQuietPeriod(v)
	if err != nil {
		return field.ErrorList{field.Invalid(path, v, err.Error())}
	}
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if g := w.PodSpec().TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	if !contract.QuietPeriodFits(quiet, grace) {
		return field.ErrorList{field.Invalid(path, v, fmt.Sprintf(
			"must be shorter than the pod's terminationGracePeriodSeconds (%d): the drain runs inside the grace period, and the kubelet's SIGKILL ends it", grace))}
	}
	return nil
}

func validateDeployment(w *workload.Workload) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if w.Replicas < 0 {
		errs = append(errs, field.Invalid(spec.Child("replicas"), w.Replicas, "must be greater than or equal to 0"))
	}
	var sel *metav1.LabelSelector
	if d, ok := w.Object().(*appsv1.Deployment); ok {
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
func generateName(w *workload.Workload) string {
	if o, ok := w.Object().(metav1.Object); ok {
		return o.GetGenerateName()
	}
	return ""
}

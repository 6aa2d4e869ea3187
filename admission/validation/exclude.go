package validation

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
)

// validateExcludedContainers checks the pod's
// contract.ExcludeContainersAnnotation: every name is a container the
// gate would aggregate (a regular container or a native sidecar, not the
// gate), none is the serving container (the gate's traffic goes to it),
// none is empty or listed twice.
func validateExcludedContainers(w *workload.Workload, v *podValidator) field.ErrorList {
	val, ok := w.Template.Annotations[contract.ExcludeContainersAnnotation]
	if !ok {
		return nil
	}
	meta := field.NewPath("metadata")
	if w.Kind != workload.KindPod {
		meta = field.NewPath("spec", "template", "metadata")
	}
	path := meta.Child("annotations").Key(contract.ExcludeContainersAnnotation)
	names, problems := contract.SplitExcludedContainers(val)
	var errs field.ErrorList
	for _, p := range problems {
		errs = append(errs, field.Invalid(path, val, p))
	}
	known := map[string]bool{}
	var list []string
	spec := w.PodSpec()
	for i := range spec.Containers {
		if !v.gate.IsContainer(i) {
			known[spec.Containers[i].Name] = true
			list = append(list, spec.Containers[i].Name)
		}
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if !v.gate.IsInit(i) && c.RestartPolicy != nil && string(*c.RestartPolicy) == "Always" {
			known[c.Name] = true
			list = append(list, c.Name)
		}
	}
	for _, n := range names {
		switch {
		case n == w.ServingContainer:
			errs = append(errs, field.Invalid(path, val,
				fmt.Sprintf("%q is the serving container: the gate's traffic goes to it, so its readiness always counts", n)))
		case !known[n]:
			errs = append(errs, field.Invalid(path, val,
				fmt.Sprintf("no container %q among the containers and native sidecars the gate aggregates (%s)", n, strings.Join(list, ", "))))
		}
	}
	return errs
}

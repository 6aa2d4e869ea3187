package preflight

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/admission/workload"
)

// autoscalingPrefix starts Knative's autoscaling annotations
// (min-scale, max-scale, target, metric, window, …).
const autoscalingPrefix = "autoscaling.knative.dev/"

// scaleAnnotations are the ones podgate run reads: they pick how many
// pods it starts (workload.Workload.Replicas), and that is all.
var scaleAnnotations = []string{
	workload.AnnotationInitialScale, workload.AnnotationInitialScaleLegacy,
	workload.AnnotationMinScale, workload.AnnotationMinScaleLegacy,
}

// Autoscaling warns, for a Knative Service, what `podgate run` does not
// do that Knative would: it never scales. Each autoscaling annotation is
// named with its field path; containerConcurrency is enforced by the
// gate, so without a scaler the requests past it queue until the
// revision's timeout. Knative's scaling needs Knative's autoscaler:
// `podgate cluster up --knative`. replicas is podgate run's --replicas
// (nil: the workload's own count).
func Autoscaling(w *workload.Workload, replicas *int32) []string {
	if w.Knative == nil {
		return nil
	}
	pods := replicasOf(w, replicas)
	var out []string
	ann := field.NewPath("spec", "template", "metadata", "annotations")
	keys := make([]string, 0, len(w.Template.Annotations))
	for k := range w.Template.Annotations {
		if strings.HasPrefix(k, autoscalingPrefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		what := "ignored"
		if slices.Contains(scaleAnnotations, k) {
			what = fmt.Sprintf("read once for how many pods to start (%d)", w.Replicas)
			if replicas != nil {
				what = fmt.Sprintf("overridden by --replicas %d", pods)
			}
		}
		out = append(out, fmt.Sprintf("%s: %s: 'podgate run' does not autoscale; Knative's autoscaler acts on it on a cluster with Knative (podgate cluster up --knative)",
			ann.Key(k), what))
	}
	if cc := w.Knative.ContainerConcurrency; cc > 0 {
		out = append(out, fmt.Sprintf("spec.template.spec.containerConcurrency: the gate lets %d request(s) at a time into each pod and queues the rest; 'podgate run' adds no pod for them (it runs %d), so under more load they wait, up to the revision's timeout (then 504)",
			cc, pods))
	}
	return out
}

package workload

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/gate/contract"
)

// Warnings are things about a valid workload its author should know: the
// places where the gate cannot fully protect traffic. They are not errors.
func (w *Workload) Warnings() []string {
	var out []string
	spec, gate := w.PodSpec(), FindGate(w.PodSpec())
	check := func(c *corev1.Container, p *field.Path) {
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && !isDrainHook(c.Lifecycle.PreStop) {
			out = append(out, p.Child("lifecycle", "preStop").String()+
				": kept as written, so this container's shutdown does not wait for the gate's drain")
		}
		if c.LivenessProbe != nil && c.LivenessProbe.Exec != nil {
			out = append(out, p.Child("livenessProbe").String()+
				": exec probes stay with the kubelet/node agent, so the gate learns of a failure only when the container restarts")
		}
		if c.StartupProbe != nil && c.StartupProbe.Exec != nil {
			out = append(out, p.Child("startupProbe").String()+
				": exec probes stay with the kubelet/node agent; the gate learns the verdict from the container status")
		}
	}
	for i := range spec.Containers {
		if !gate.IsContainer(i) {
			check(&spec.Containers[i], w.SpecPath().Child("containers").Index(i))
		}
	}
	return out
}

func isDrainHook(h *corev1.LifecycleHandler) bool {
	return h.HTTPGet != nil && h.HTTPGet.Path == contract.DrainPath
}

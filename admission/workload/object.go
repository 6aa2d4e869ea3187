package workload

import (
	"encoding/json"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	"github.com/podgate/podgate/internal/specdecode"
)

// header is what every object document names before its kind is known.
type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

// object decodes one JSON object document (or List item) into a workload.
func (l *loader) object(src Source, js []byte, inList bool) {
	var h header
	// Case-sensitive like the API server: "ApiVersion" is not apiVersion.
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &h); err != nil {
		l.problems = append(l.problems, documentProblem(src, "", "", "%s", notAnObject(js)))
		return
	}
	kind, name := h.Kind, h.Metadata.Name
	if h.Kind == "" || h.APIVersion == "" {
		var missing []string
		if h.APIVersion == "" {
			missing = append(missing, "apiVersion")
		}
		if h.Kind == "" {
			missing = append(missing, "kind")
		}
		l.problems = append(l.problems, documentProblem(src, kind, name,
			"%s not set: every document needs apiVersion and kind", strings.Join(missing, " and ")))
		return
	}
	switch gvk := h.APIVersion + "/" + h.Kind; gvk {
	case "v1/List":
		if inList {
			l.problems = append(l.problems, documentProblem(src, kind, name, "a List inside a List is not supported"))
			return
		}
		l.list(src, js)
	case "v1/Pod":
		pod := &corev1.Pod{}
		if l.decode(src, kind, name, js, pod) {
			l.add(podWorkload(src, pod))
		}
	case "apps/v1/Deployment":
		d := &appsv1.Deployment{}
		if l.decode(src, kind, name, js, d) {
			l.add(deploymentWorkload(src, d))
		}
	case KnativeGroupVersion + "/Service":
		s := &Service{}
		if l.decode(src, kind, name, js, s) {
			l.add(serviceWorkload(src, s))
		}
	default:
		if supportedKindElsewhere(h.APIVersion, h.Kind) {
			l.problems = append(l.problems, documentProblem(src, kind, name,
				"apiVersion %q is not supported for kind %s: podgate reads v1 Pod, apps/v1 Deployment, %s Service and v1 List",
				h.APIVersion, h.Kind, KnativeGroupVersion))
			return
		}
		l.out.Skipped = append(l.out.Skipped, Skipped{
			Source: src, APIVersion: h.APIVersion, Kind: h.Kind, Name: name,
			Raw: append(json.RawMessage(nil), js...), seq: l.seq,
		})
		l.seq++
	}
}

// supportedKindElsewhere tells objects that look like a workload podgate
// runs but in another version: those are mistakes, not other kinds.
func supportedKindElsewhere(apiVersion, kind string) bool {
	switch {
	case kind == KindPod, kind == KindDeployment, kind == "List":
		return true
	case strings.HasPrefix(apiVersion, "serving.knative.dev/") && kind == KindService:
		return true
	}
	return false
}

func (l *loader) add(w *Workload) {
	setDefaults(w)
	w.seq = l.seq
	l.seq++
	l.out.Workloads = append(l.out.Workloads, w)
}

// list loads the items of a v1 List, each as if it were its own document.
func (l *loader) list(src Source, js []byte) {
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &list); err != nil {
		l.problems = append(l.problems, fieldProblem(src, "List", "",
			field.Invalid(field.NewPath("items"), nil, "must be an array of objects")))
		return
	}
	var extra map[string]json.RawMessage
	_ = json.Unmarshal(js, &extra)
	for k := range extra {
		switch k {
		case "apiVersion", "kind", "metadata", "items":
		default:
			l.problems = append(l.problems, fieldProblem(src, "List", "",
				field.Forbidden(field.NewPath(k), "unknown field")))
		}
	}
	for _, item := range list.Items {
		l.object(src, item, true)
	}
}

// decode strictly decodes js into obj and records every problem. It
// reports whether obj is complete enough to build a workload from:
// unknown fields do not stop decoding, type errors do.
func (l *loader) decode(src Source, kind, name string, js []byte, obj any) bool {
	errs, ok := specdecode.Strict(js, obj, nil)
	for _, e := range errs {
		l.problems = append(l.problems, fieldProblem(src, kind, name, e))
	}
	return ok
}

func podWorkload(src Source, p *corev1.Pod) *Workload {
	return &Workload{
		Source: src, APIVersion: p.APIVersion, Kind: KindPod,
		Namespace: p.Namespace, Name: p.Name, Labels: copyMap(p.Labels),
		Replicas: 1,
		Template: corev1.PodTemplateSpec{ObjectMeta: *p.ObjectMeta.DeepCopy(), Spec: *p.Spec.DeepCopy()},
		object:   p,
	}
}

func deploymentWorkload(src Source, d *appsv1.Deployment) *Workload {
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	return &Workload{
		Source: src, APIVersion: d.APIVersion, Kind: KindDeployment,
		Namespace: d.Namespace, Name: d.Name, Labels: copyMap(d.Labels),
		Replicas: replicas,
		Template: *d.Spec.Template.DeepCopy(),
		object:   d,
	}
}

func serviceWorkload(src Source, s *Service) *Workload {
	k := &KnativeSettings{}
	if v := s.Spec.Template.Spec.ContainerConcurrency; v != nil {
		k.ContainerConcurrency = *v
	}
	if v := s.Spec.Template.Spec.TimeoutSeconds; v != nil {
		k.TimeoutSeconds = *v
	}
	if v := s.Spec.Template.Spec.ResponseStartTimeoutSeconds; v != nil {
		k.ResponseStartTimeoutSeconds = *v
	}
	if v := s.Spec.Template.Spec.IdleTimeoutSeconds; v != nil {
		k.IdleTimeoutSeconds = *v
	}
	return &Workload{
		Source: src, APIVersion: s.APIVersion, Kind: KindService,
		Namespace: s.Namespace, Name: s.Name, Labels: copyMap(s.Labels),
		Template: corev1.PodTemplateSpec{
			ObjectMeta: *s.Spec.Template.ObjectMeta.DeepCopy(),
			Spec:       *s.Spec.Template.Spec.PodSpec.DeepCopy(),
		},
		Knative: k,
		object:  s,
	}
}

// notAnObject says what is wrong with a document whose header does not
// decode, in manifest terms rather than Go's.
func notAnObject(js []byte) string {
	var doc any
	if err := json.Unmarshal(js, &doc); err != nil {
		return "not a Kubernetes object: " + specdecode.ShortJSONError(err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return fmt.Sprintf("not a Kubernetes object: the document is %s, not a mapping with apiVersion, kind and metadata", specdecode.KindOf(doc))
	}
	for _, k := range []string{"apiVersion", "kind"} {
		if v, ok := obj[k]; ok {
			if _, isString := v.(string); !isString {
				return fmt.Sprintf("not a Kubernetes object: %s must be a string, not %s", k, specdecode.KindOf(v))
			}
		}
	}
	return "not a Kubernetes object: metadata must be a mapping with a string name"
}

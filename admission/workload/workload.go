package workload

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Kinds podgate runs.
const (
	KindPod        = "Pod"
	KindDeployment = "Deployment"
	KindService    = "Service" // serving.knative.dev/v1
)

// Source locates a manifest document: the file and the document's number
// in it, counting non-empty documents from 1.
type Source struct {
	File string
	Doc  int
}

func (s Source) String() string { return fmt.Sprintf("%s: doc %d", s.File, s.Doc) }

// Workload is one Pod, Deployment or Knative Service, normalized to what a
// runtime needs: identity, how many pods, the pod template, and which
// container serves traffic.
type Workload struct {
	Source     Source
	APIVersion string
	Kind       string
	Namespace  string // "default" when the manifest names none
	Name       string
	Labels     map[string]string

	// Replicas is how many pods to run: 1 for a Pod, spec.replicas for a
	// Deployment, the initial scale of a Knative Service.
	Replicas int32
	// Template is the pod: its metadata and spec. For a Pod, the Pod's own.
	Template corev1.PodTemplateSpec

	// ServingContainer is the name of the container traffic goes to, and
	// ServingPort its port (Knative's user port).
	ServingContainer string
	ServingPort      int32
	// ServingPortUndeclared: the serving container declares no port, so
	// ServingPort is Knative's default, what its $PORT says.
	ServingPortUndeclared bool

	// Knative is set for Knative Services only.
	Knative *KnativeSettings

	// object is the decoded manifest, kept to write it back out.
	object any
	// seq orders the workload among the objects loaded (Manifests.InOrder).
	seq int
}

// KnativeSettings are the revision settings of a Knative Service.
type KnativeSettings struct {
	// RevisionName is the template's metadata.name, else NAME-00001.
	RevisionName         string
	ContainerConcurrency int64
	TimeoutSeconds       int64
	// ResponseStartTimeoutSeconds and IdleTimeoutSeconds: 0 when unset
	// (no limit).
	ResponseStartTimeoutSeconds, IdleTimeoutSeconds int64
}

// ID names the workload as "Kind/name" for messages.
func (w *Workload) ID() string {
	name := w.Name
	if name == "" {
		name = "<no name>"
	}
	return w.Kind + "/" + name
}

// PodSpec is the workload's pod spec.
func (w *Workload) PodSpec() *corev1.PodSpec { return &w.Template.Spec }

// SpecPath is the field path of the pod spec inside the manifest:
// spec for a Pod, spec.template.spec otherwise.
func (w *Workload) SpecPath() *field.Path {
	if w.Kind == KindPod {
		return field.NewPath("spec")
	}
	return field.NewPath("spec", "template", "spec")
}

// PodLabels are the labels every pod of the workload carries: the
// template's, plus Knative's service/configuration/revision labels for a
// Knative Service, as Knative sets them on the pods it creates.
func (w *Workload) PodLabels() map[string]string {
	out := make(map[string]string, len(w.Template.Labels)+3)
	for k, v := range w.Template.Labels {
		out[k] = v
	}
	if w.Knative != nil {
		out[LabelKnativeService] = w.Name
		out[LabelKnativeConfiguration] = w.Name
		out[LabelKnativeRevision] = w.Knative.RevisionName
	}
	return out
}

// Container returns the container (regular, else init) with the given
// name, or nil.
func (w *Workload) Container(name string) *corev1.Container {
	spec := &w.Template.Spec
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	for i := range spec.InitContainers {
		if spec.InitContainers[i].Name == name {
			return &spec.InitContainers[i]
		}
	}
	return nil
}

// Object returns the manifest object (*corev1.Pod, *appsv1.Deployment or
// *Service) with the workload's current pod template in it.
func (w *Workload) Object() any {
	switch o := w.object.(type) {
	case *corev1.Pod:
		c := o.DeepCopy()
		c.ObjectMeta = *w.Template.ObjectMeta.DeepCopy()
		c.Spec = *w.Template.Spec.DeepCopy()
		return c
	case *appsv1.Deployment:
		c := o.DeepCopy()
		c.Spec.Template = *w.Template.DeepCopy()
		return c
	case *Service:
		c := *o
		c.Spec.Template.ObjectMeta = *w.Template.ObjectMeta.DeepCopy()
		c.Spec.Template.Spec.PodSpec = *w.Template.Spec.DeepCopy()
		if k := w.Knative; k != nil {
			cc, ts := k.ContainerConcurrency, k.TimeoutSeconds
			c.Spec.Template.Spec.ContainerConcurrency = &cc
			c.Spec.Template.Spec.TimeoutSeconds = &ts
			if rs := k.ResponseStartTimeoutSeconds; rs != 0 {
				c.Spec.Template.Spec.ResponseStartTimeoutSeconds = &rs
			}
			if it := k.IdleTimeoutSeconds; it != 0 {
				c.Spec.Template.Spec.IdleTimeoutSeconds = &it
			}
		}
		return &c
	}
	return nil
}

// DeepCopy copies the workload, so rewriting the copy leaves w alone.
func (w *Workload) DeepCopy() *Workload {
	c := *w
	c.Labels = copyMap(w.Labels)
	c.Template = *w.Template.DeepCopy()
	if w.Knative != nil {
		k := *w.Knative
		c.Knative = &k
	}
	return &c
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

package servingv1

import (
	"encoding/json"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SchemeGroupVersion is the apiVersion of Knative Serving's Service.
var SchemeGroupVersion = schema.GroupVersion{Group: "serving.knative.dev", Version: "v1"}

// Service is a serving.knative.dev/v1 Service as the local control
// API serves it: metadata, the spec as given (podgate does not interpret it
// here), and the status fields `kn service list` and `kubectl get ksvc` show.
// It is declared here, not taken from Knative, to keep podgate free of
// Knative's module; the JSON shape is Knative's.
type Service struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is the manifest's spec, kept verbatim.
	Spec   json.RawMessage `json:"spec,omitempty"`
	Status ServiceStatus   `json:"status,omitempty"`
}

// ServiceStatus is the subset of Knative's ServiceStatus podgate
// fills in.
type ServiceStatus struct {
	ObservedGeneration int64       `json:"observedGeneration,omitempty"`
	Conditions         []Condition `json:"conditions,omitempty"`
	// URL is http://NAME.NAMESPACE.DOMAIN, as Knative's default domain
	// template makes it (docs/activator.md, "Routing by host").
	URL                       string          `json:"url,omitempty"`
	Address                   *Addressable    `json:"address,omitempty"`
	LatestCreatedRevisionName string          `json:"latestCreatedRevisionName,omitempty"`
	LatestReadyRevisionName   string          `json:"latestReadyRevisionName,omitempty"`
	Traffic                   []TrafficTarget `json:"traffic,omitempty"`
}

// Condition is Knative's apis.Condition (Ready,
// ConfigurationsReady, RoutesReady on a Service).
type Condition struct {
	Type   string                 `json:"type"`
	Status corev1.ConditionStatus `json:"status"`
	// Severity is empty for conditions that decide readiness ("Error"),
	// else "Warning" or "Info".
	Severity           string      `json:"severity,omitempty"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	Reason             string      `json:"reason,omitempty"`
	Message            string      `json:"message,omitempty"`
}

// Addressable is Knative's duck-typed address.
type Addressable struct {
	URL string `json:"url,omitempty"`
}

// TrafficTarget is one entry of status.traffic.
type TrafficTarget struct {
	Tag            string `json:"tag,omitempty"`
	RevisionName   string `json:"revisionName,omitempty"`
	LatestRevision *bool  `json:"latestRevision,omitempty"`
	Percent        *int64 `json:"percent,omitempty"`
	URL            string `json:"url,omitempty"`
}

// ServiceList is the list the API serves for Knative Services.
type ServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Service `json:"items"`
}

// Condition returns the condition of type t, or nil.
func (s *ServiceStatus) Condition(t string) *Condition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// DeepCopyInto copies s into out.
func (s *Service) DeepCopyInto(out *Service) {
	*out = *s
	out.TypeMeta = s.TypeMeta
	s.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = slices.Clone(s.Spec)
	s.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a copy of s (nil for nil).
func (s *Service) DeepCopy() *Service {
	if s == nil {
		return nil
	}
	out := new(Service)
	s.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (s *Service) DeepCopyObject() runtime.Object {
	if c := s.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies s into out.
func (s *ServiceStatus) DeepCopyInto(out *ServiceStatus) {
	*out = *s
	if s.Conditions != nil {
		out.Conditions = make([]Condition, len(s.Conditions))
		for i := range s.Conditions {
			out.Conditions[i] = s.Conditions[i]
			s.Conditions[i].LastTransitionTime.DeepCopyInto(&out.Conditions[i].LastTransitionTime)
		}
	}
	if s.Address != nil {
		a := *s.Address
		out.Address = &a
	}
	if s.Traffic != nil {
		out.Traffic = make([]TrafficTarget, len(s.Traffic))
		for i, t := range s.Traffic {
			if t.LatestRevision != nil {
				v := *t.LatestRevision
				t.LatestRevision = &v
			}
			if t.Percent != nil {
				v := *t.Percent
				t.Percent = &v
			}
			out.Traffic[i] = t
		}
	}
}

// DeepCopyInto copies l into out.
func (l *ServiceList) DeepCopyInto(out *ServiceList) {
	*out = *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Service, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopyObject implements runtime.Object.
func (l *ServiceList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := new(ServiceList)
	l.DeepCopyInto(out)
	return out
}

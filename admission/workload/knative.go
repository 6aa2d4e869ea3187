package workload

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Knative Serving's API, reduced to what podgate reads. Only the shapes are
// declared here (no client, no defaulting code from Knative): a Service's
// revision template is a PodSpec plus a few fields of its own.

// KnativeGroupVersion is the apiVersion of the Knative Service kind.
const KnativeGroupVersion = "serving.knative.dev/v1"

// Service is a serving.knative.dev/v1 Service.
type Service struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ServiceSpec `json:"spec,omitempty"`
	// Status is accepted (manifests exported from a cluster carry it) and
	// ignored.
	Status json.RawMessage `json:"status,omitempty"`
}

// ServiceSpec is a Configuration (the revision template) plus routing.
type ServiceSpec struct {
	Template RevisionTemplateSpec `json:"template"`
	Traffic  []TrafficTarget      `json:"traffic,omitempty"`
}

// RevisionTemplateSpec is the template each Revision is stamped from.
type RevisionTemplateSpec struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              RevisionSpec `json:"spec,omitempty"`
}

// RevisionSpec is a PodSpec with Knative's request settings.
type RevisionSpec struct {
	corev1.PodSpec `json:",inline"`
	// ContainerConcurrency is the most requests one pod serves at once;
	// 0 means no limit.
	ContainerConcurrency *int64 `json:"containerConcurrency,omitempty"`
	// TimeoutSeconds is the request timeout (and the pod's grace period).
	TimeoutSeconds *int64 `json:"timeoutSeconds,omitempty"`
	// ResponseStartTimeoutSeconds bounds the time until the response
	// starts, IdleTimeoutSeconds the time without a byte of it; unset or
	// 0 is no limit. The gate applies both.
	ResponseStartTimeoutSeconds *int64 `json:"responseStartTimeoutSeconds,omitempty"`
	IdleTimeoutSeconds          *int64 `json:"idleTimeoutSeconds,omitempty"`
}

// TrafficTarget is one entry of spec.traffic; podgate runs only the latest
// revision and keeps the rest for the round trip.
type TrafficTarget struct {
	Tag               string `json:"tag,omitempty"`
	RevisionName      string `json:"revisionName,omitempty"`
	ConfigurationName string `json:"configurationName,omitempty"`
	LatestRevision    *bool  `json:"latestRevision,omitempty"`
	Percent           *int64 `json:"percent,omitempty"`
	URL               string `json:"url,omitempty"`
}

// Knative's labels on a Service's pods, as Knative sets them (docs/running.md).
const (
	LabelKnativeService       = "serving.knative.dev/service"
	LabelKnativeConfiguration = "serving.knative.dev/configuration"
	LabelKnativeRevision      = "serving.knative.dev/revision"
)

// Knative's defaults (config-defaults), as shipped.
const (
	knativeDefaultTimeoutSeconds = 300
	knativeUserContainerName     = "user-container"
	knativeInitContainerName     = "init-container"
)

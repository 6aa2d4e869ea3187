package lab

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodLister lists pods of every namespace: podgate run's control API (Local),
// or a cluster's namespace (*ClusterNamespace).
type PodLister interface {
	ListPods(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)
}

// Pods is what a scenario reads of and does to its pods.
type Pods interface {
	PodLister
	ListEvents(ctx context.Context, opts metav1.ListOptions) (*corev1.EventList, error)
	DeletePod(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error
}

// ServiceState is what a service's status says of its traffic.
type ServiceState int

const (
	// Serving: some pod takes traffic. podgate run: the Knative Service
	// Ready; a cluster: the Service has a ready endpoint.
	Serving ServiceState = iota
	// NotServing: no pod takes traffic any more (podgate run: Ready
	// Unknown NoHealthyBackends; a cluster: no ready endpoint).
	NotServing
	// NeverServed: no pod took traffic yet (podgate run: Ready Unknown
	// RevisionMissing; a cluster: no ready endpoint).
	NeverServed
)

func (s ServiceState) String() string {
	switch s {
	case Serving:
		return "serving"
	case NotServing:
		return "not serving"
	case NeverServed:
		return "never served"
	}
	return "unknown"
}

// World is where a scenario runs, the same steps either way: `podgate
// run` with the scenario's manifests (Local), or a namespace of a
// cluster of `podgate cluster up` with them applied (ClusterNamespace).
// Load goes through the world's front door; toggles, the gate's
// readiness and metrics to the pods at their addresses through PodHTTP.
type World interface {
	Pods
	// Namespace holds the scenario's objects.
	Namespace() string
	// FrontDoorURL is the front door's base URL (http://127.0.0.1:PORT/);
	// Host the Host header that routes to service there.
	FrontDoorURL() string
	Host(service string) string
	// PodHTTP reaches the pods at their addresses.
	PodHTTP() *PodHTTP
	// WaitService waits until the service's status says state.
	WaitService(ctx context.Context, service string, state ServiceState) error
	// StatusMessage is what the service's status says of its pods that
	// take no traffic (the containers not ready, with their probes'
	// messages): podgate run's Ready condition, a cluster's gate
	// conditions on the pods.
	StatusMessage(ctx context.Context, service string) (string, error)
	// TimesOutHeldRequests reports that a held request ends in 504 after
	// its revision's timeoutSeconds (podgate run's front door); a
	// cluster's activator has one --request-timeout for every Service.
	TimesOutHeldRequests() bool
	// Output is the containers' output so far, lines prefixed
	// "POD/CONTAINER | ".
	Output() string
	// Logs is what to show of the world when a scenario failed.
	Logs() string
	// Stop ends the scenario's pods gracefully and reports a stop that
	// was not clean.
	Stop(timeout time.Duration) error
}

package gate

import (
	"context"

	"github.com/podgate/podgate/gate/readiness"
)

// StatusSource tells the gate the state of its pod's containers: the only
// way it learns about containers whose readiness probe it cannot run (exec
// probes), and a second view of the others.
//
// The interface lives here, with its consumer; implementations live with
// what they read (package gate/podapi, on a client-go informer, for both the local
// control API and a real API server).
type StatusSource interface {
	// Watch calls update with the status of every container of the pod:
	// once when first known and again on every change, one call at a time,
	// until ctx ends (it then returns ctx.Err()) or the source fails (it
	// returns the error; the gate keeps the last statuses it got and calls
	// Watch again after a pause). A pod that does not exist (yet) is
	// reported as an empty slice.
	Watch(ctx context.Context, update func([]readiness.ContainerStatus)) error
}

// PodStatus is what a status source says about the gate's pod as a whole.
type PodStatus struct {
	Containers []readiness.ContainerStatus
	// Terminating is set once the pod has a deletionTimestamp, or is gone:
	// it is being deleted, so the gate drains, whether or not its own
	// SIGTERM has come. As a native sidecar the gate is stopped after the
	// other containers, so that SIGTERM comes too late to drain by.
	Terminating bool
	// Ready is the pod's Ready condition being True. The pod's endpoint
	// (EndpointSlice) follows it, so while it is false no router that
	// follows the endpoints sends the pod new requests: the gate may hand
	// requests it holds to Knative's activator (contract.EnvHandoffURL).
	Ready bool
}

// PodWatcher is a StatusSource that sees the whole pod (the local node
// agent's does); the gate then learns of the pod's deletion from it too.
type PodWatcher interface {
	StatusSource
	// WatchPod is Watch, with the pod's own state in each report.
	WatchPod(ctx context.Context, update func(PodStatus)) error
}

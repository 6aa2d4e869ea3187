// Package localcluster is the control plane of `podgate run`: the parts
// Kubernetes runs outside the node (the API server's pod semantics, and
// over time the workload, EndpointSlice and Knative Service controllers),
// written over the embedded store. On Kubernetes it is not started: the
// node agent (package runtime) talks to the real API server instead.
package localcluster

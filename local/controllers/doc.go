// Package controllers is the control plane of `podgate run`: the parts
// Kubernetes runs off the node, written over the embedded store —
// workloads → pods and the scheduler's binding (Workloads), the API
// server's pod deletion and the node agent's pod watch (Pods), the
// EndpointSlice controller and Knative's Service status (Endpoints). On
// Kubernetes it is not started: the node agent (package node) talks to
// the real API server instead.
package controllers

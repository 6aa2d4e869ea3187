// Package runtime is podgate's local node agent: it runs the pods of Pod,
// Deployment and Knative Service manifests as processes on this machine,
// with the kubelet's lifecycle (docs/facts.md §2–3), and publishes what
// the kubelet and the control plane would — pod status, events and
// EndpointSlices — into an objstore.Store that the control API serves.
//
// The pieces, each in its own file:
//
//   - Agent (agent.go): options, start, graceful shutdown; it implements
//     api.PodDeleter and api.LogSource.
//   - workload (workload.go): the replica controller of one manifest —
//     names pods like the ReplicaSet or Knative would, replaces deleted
//     ones, and owns the workload's EndpointSlice.
//   - pod (pod*.go): one goroutine per pod, the kubelet's pod worker. It
//     alone changes the pod's state; process exits, probe results,
//     timers and deletions reach it through a queue. Init containers run
//     in order; native sidecars start in order, each gated on its startup
//     probe, and stop after the main containers in reverse order.
//   - probes: one prober.Manager per pod over one shared probe.Runner.
//   - processes: runtime/proc (own process group per container, parent-
//     death signal and a guardian process so nothing outlives podgate).
//
// Where podgate deliberately differs from the kubelet it is in the user's
// favour and said in docs/running.md; the main one: when a liveness or
// startup probe fails at its threshold, the container is marked not ready
// and the pod's status and endpoint are written *before* the kill starts
// (docs/facts.md §3, seed 004), so traffic leaves before SIGTERM arrives.
package runtime

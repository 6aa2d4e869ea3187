// Package runtime is podgate's node agent, the kubelet's part and nothing
// else: it runs the pods bound to its node as processes on this machine,
// with the kubelet's lifecycle (docs/facts.md §2–3), and reports pod
// status and events. Who plays the API server is not its concern: it
// learns of its pods through a PodSource and writes through a PodWriter,
// interfaces of its own (docs/architecture.md). For `podgate run` they
// are package localcluster's, over the embedded store.
//
// The pieces, each in its own file:
//
//   - Agent (agent.go): options, the preflight Check, graceful shutdown;
//     it implements api.LogSource.
//   - node.go: the interfaces to the API, and what the agent does with
//     what it observes: a new pod gets a worker, a deletion (the API's
//     deletionTimestamp) starts termination, a removal kills at once.
//   - pod (pod*.go): one goroutine per pod, the kubelet's pod worker. It
//     alone changes the pod's state; process exits, probe results,
//     timers and deletions reach it through a queue. Init containers run
//     in order; native sidecars start in order, each gated on its startup
//     probe, and stop after the main containers in reverse order.
//   - probes: one prober.Manager per pod over one shared probe.Runner.
//   - network.go: PodNetwork, each pod's address and the network its
//     processes start in (containers, exec probes, exec hooks, through
//     PodNet.Enter); the default is loopback addresses on the host
//     (ipam.go), where ports.go checks a container's ports before it
//     starts. Package podnet/nodenet adapts pod network namespaces.
//
// and, each in a subpackage of its own, what the pod worker uses:
// runtime/proc (a process group per container, parent-death signal and a
// guardian process so nothing outlives podgate), runtime/queue (the pod
// worker's mailbox), runtime/backoff (CrashLoopBackOff), runtime/events
// (the event recorder), runtime/logbuf (the output kept for logs),
// runtime/env (a container's environment), runtime/hooks (preStop
// handlers) and runtime/images (which program a container runs).
//
// Where podgate deliberately differs from the kubelet it is in the user's
// favour and said in docs/running.md; the main one: when a liveness or
// startup probe fails at its threshold, the container is marked not ready
// and the pod's status is written *before* the kill starts (docs/facts.md
// §3, seed 004); the local control plane turns the endpoint not ready
// before that write returns, so traffic leaves before SIGTERM arrives.
package runtime

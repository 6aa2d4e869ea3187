// Package prober runs the kubelet's probe workers for one pod: when to probe,
// how many consecutive results count, and what a container's Started and
// Ready are (docs/facts.md §2).
//
// The model: a Manager owns one worker per (container, probe kind). A worker
// never looks at processes or sockets itself; one tick is an injected
// AttemptFunc (the runtime wires probe.Runner in), and time comes from an
// injected k8s.io/utils/clock, so every timing rule is a fast deterministic
// test on a fake clock. The caller tells the Manager about the container
// lifecycle (ContainerStarted with a new container ID, ContainerStopped,
// PodTerminating, PodStatusChanged, Stop) and gets back, in order, Updates:
// published state changes (after successThreshold/failureThreshold
// consecutive identical results, only when the state changes) and one note
// per failed, warned or errored attempt for the Unhealthy/ProbeWarning events.
//
// Scheduling: a worker probes a new container as soon as initialDelaySeconds
// have passed since the container started, then on a fixed-rate grid of
// periodSeconds anchored there. A slow attempt drops the grid points it
// overran (one immediate catch-up run, like a Go ticker's held tick) and never
// stretches the period. A manual run (PodStatusChanged, or readiness becoming
// eligible when the container becomes Started) re-anchors the grid, as the
// kubelet resets its ticker on a manual trigger.
//
// The rules themselves (Kubernetes' probe defaults, threshold counting with
// Counter, the grid with FirstTick and NextTick, Knative's periodSeconds: 0
// through Timing) are pure functions of their inputs, shared with the
// gate's aggregator, which probes on the same grid with the same counting.
//
// Deliberate differences from the kubelet, each in the user's favour:
//   - The kubelet notices a new container only on its worker's next tick, so
//     the first probe lands anywhere in [delay, delay+period). Here it lands
//     at the delay, as the Kubernetes documentation describes it.
//   - A liveness (or startup) Failure at threshold makes the container
//     not Ready in the same Update that asks for the restart, so traffic is
//     taken away before the kill instead of after the restart (docs/facts.md §3, seed
//     004).
//   - Counters start afresh for a new container; the kubelet carries the
//     previous container's run over.
//   - A container that exits publishes readiness Failure (as the kubelet
//     does) but not liveness Failure, which would read as "kill it".
//   - An in-flight attempt is cancelled (its context ends) when its result
//     can no longer count: the container was replaced or stopped, the pod is
//     terminating (liveness/startup), or the Manager stops.
package prober

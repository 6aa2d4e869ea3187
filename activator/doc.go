// Package activator is podgate's front door: it sends a request only to a
// pod whose every container is ready, holds requests while no pod is, and
// balances load across the pods of a target (a Knative revision or a
// workload).
//
// A pod is a backend of its target. A backend takes traffic only when both
// views of the pod agree it can serve:
//
//   - Kubernetes' view, the pod's endpoint (ready, not terminating), fed in
//     through the Backends interface by whoever watches EndpointSlices
//     (activator/kubebackends, on client-go informers, against podgate
//     run's control API and a cluster's API server alike);
//   - the gate's view: the sidecar on port 8012 answers a Knative activator
//     health check with 200 "queue" when every container of the pod is
//     ready. The activator probes every gate continuously.
//
// The gate's answer alone is enough only while the endpoint has never been
// ready and the pod's readiness is wholly visible to the gate (no exec
// readiness probe, no startup probe, no readiness gate anywhere in the pod):
// the fast path, which Knative also takes but, unlike podgate, even when a
// sidecar has an exec readiness probe the gate cannot see.
//
// The parts, one file each: Pod and Backends (the input), backend (the
// usable rule), balancer (least in-flight with a per-pod capacity and a
// bounded FIFO of held requests; no goroutines, no clock), prober (the gate
// health check and its loop), Target (state + probers; an http.Handler),
// handler.go (timeout, retry of requests that never left, proxying) and
// Router (Host → target). Time comes from an injected k8s.io/utils/clock so
// the request timeout and the probe interval are deterministic tests.
// docs/activator.md explains the choices.
package activator

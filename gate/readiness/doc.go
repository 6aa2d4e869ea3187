// Package readiness is the gate's verdict on every container of its pod:
// the Aggregator runs each container's HTTP, TCP or gRPC readiness probe
// in the background with kubelet semantics (initial delay, period,
// timeout, thresholds, the fixed-rate grid), aggressively while a
// periodSeconds: 0 probe is not ready yet or while a container is marked
// down, runs a copy of each container's liveness probe (a watched probe:
// the container leaves traffic one failure before the kubelet's kill),
// and folds in what the gate learns elsewhere: an older injection's routed
// liveness and startup probes' results, a refused connection, and the status
// source's container statuses (the only word on containers whose exec
// readiness probe stays with the node agent or kubelet). The aggregate
// is one atomic value, so a health check costs a load.
//
// With HTTP/2 auto-detection (Knative's ENABLE_HTTP2_AUTO_DETECTION) a
// plain-HTTP readiness probe also passes over h2c, and the Aggregator
// says whether the serving container speaks h2c only.
//
// It knows nothing of health checks, the proxy or the drain: package gate
// composes them with it. Time comes from an injected k8s.io/utils/clock.
package readiness

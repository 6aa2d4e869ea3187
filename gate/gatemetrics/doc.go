// Package gatemetrics is the gate's Prometheus metrics: proxied requests by
// status and duration, ride-through holds and retries, upstream errors,
// readiness per container, probe results, and gauges read at scrape time
// (in flight, queue depth, ready, health checks held), on a registry of
// the gate's own so several gates can share a process; beside them Knative
// queue-proxy's kn_serving_invocation_duration_seconds and
// kn_serving_queue_depth, named as its OpenTelemetry Prometheus exporter
// names them. The request path costs an atomic load, a counter increment
// and two histogram observations.
package gatemetrics

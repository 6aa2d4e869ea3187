// Package gate is podgate's sidecar: it answers for the readiness of the
// whole pod, proxies traffic into the serving container without client
// errors while that container restarts, and drains before the pod stops.
// It reads Knative queue-proxy's environment (package gate/contract), so it can
// stand in for queue-proxy.
//
// The parts, each in its own file:
//
//   - gate.go: New wires the parts below and the subpackages together;
//     Serve runs the ports and, on SIGTERM or the pod's deletion,
//     the drain. A health answer is a load of one atomic value (and, with
//     an aggressive probe, one shared probe attempt).
//   - tls.go: the TLS traffic port (QUEUE_SERVING_TLS_PORT), opened when
//     the serving certificate is mounted at start, as queue-proxy does;
//     its certificate is package gate/servingtls's, reloaded on rotation.
//   - health.go: the health-check protocol of queue-proxy (docs/facts.md
//     §4): which requests are health checks and what they are answered.
//   - admin.go: the admin port — /wait-for-drain holds every container's
//     preStop until the drain is done, /readyz, /readyz/gate (the gate
//     alone, for its own kubelet probe), an older injection's routed
//     liveness and startup probes; calls that change the gate's state only from the
//     pod itself or with its admin token.
//   - the pod condition (condition.go): the gate's verdict, naming each
//     container that is not ready, written on its own pod through a
//     ConditionWriter (package gate/podapi) for the pod's readiness gate.
//   - hold.go: the door — a request that arrives while not every
//     container is ready waits until they are, is handed to Knative's
//     activator once the pod is out of the endpoints (PODGATE_HANDOFF_URL,
//     at most contract.MaxHandoffs times, with a backoff), or ends with
//     its time limit; the drain releases it.
//   - status.go: the StatusSource through which the gate learns its
//     containers' statuses and its pod's deletion.
//
// and, in subpackages: gate/readiness (the aggregated readiness of every
// container: each HTTP/TCP/gRPC readiness probe run in the background
// with kubelet semantics, aggressively while a periodSeconds: 0 probe is
// not yet ready; exec-probed containers counted through the status
// source), gate/proxy (the data path: reverse proxy, the
// ride-through that holds a request whose connection the restarting
// container refused or that died in it unanswered and may be repeated,
// concurrency limit, queue-proxy's three time limits, request log),
// gate/drain (when a terminating gate may exit: SIGTERM fails readiness at
// once, the gate exits after a quiet period without new requests and with
// none in flight), gate/gatemetrics (the Prometheus metrics, podgate's and
// queue-proxy's names) and gate/autoscalerstats (the statistics Knative's
// autoscaler scrapes on port 9090: time-weighted concurrency and requests
// per second of each second, as a protobuf Stat).
//
// Time comes from an injected k8s.io/utils/clock, so the timing rules are
// deterministic tests.
package gate

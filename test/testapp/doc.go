// Package testapp is podgate's toggle server: the app the examples and tests
// run as a container (image ghcr.io/podgate/testapp, `podgate testapp`,
// `podgate-testapp`). Its probe endpoints can be flipped at run time, so a
// scenario can make one container of a pod unready or dead on demand.
//
// HTTP endpoints (on $POD_IP:--port; on every address when $POD_IP is not
// loopback, i.e. the pod has a network namespace of its own):
//
//	/             200 with the app's name and a newline (any path not below)
//	/readyz       readiness: 503 until --ready-after elapsed, then follows the
//	              ready toggle (200 / 503)
//	/healthz      liveness like agnhost's `liveness`: 200 for --fail-live-after
//	              after start, then 500 for good; 500 as well while the live
//	              toggle is off
//	/livez        the live toggle alone (200 / 500)
//	/toggleReady  flip readiness   (GET or POST; ?set=true|false sets instead)
//	/toggleLive   flip liveness    (GET or POST; ?set=true|false sets instead)
//	/toggleExec   remove or create --exec-file, which an exec probe `cat`s
//	/redirect     ?loc=URL[&code=N]: answers N (default 302) to loc
//
// Every readiness check logs `Readiness probe called, responding with: true`
// (or false), every liveness check the same with `Liveness`, as the app in
// the original Knative experiments did; toggles log what they did.
//
// With --grpc-port a real grpc.health.v1 server runs on $POD_IP:N. Service ""
// and "readiness" report SERVING exactly when /readyz answers 200, service
// "liveness" exactly when /healthz does; any other service is NotFound.
//
// Termination (the context given to Run ends, i.e. SIGTERM or SIGINT in the
// binaries): with --sleep-on-term D the app keeps serving, probes unchanged,
// for D, then closes its listeners and exits 0; without it, it exits at once.
//
// A started app is live and ready (after --ready-after) and its exec file
// exists, whatever a previous run left behind: a restarted container comes
// back healthy unless its flags say otherwise.
package testapp

// Usage is the endpoint summary both binaries print in their help.
const Usage = `Endpoints (on $POD_IP:PORT, $POD_IP default 127.0.0.1; every address if not loopback):
  /             200 with the name and a newline (any other path too)
  /readyz       503 until --ready-after elapsed, then follows the ready toggle
  /healthz      200 until --fail-live-after (if set), then 500; 500 while live toggle is off
  /livez        the live toggle (200 / 500)
  /toggleReady  flip readiness (GET or POST; ?set=true|false sets it)
  /toggleLive   flip liveness  (GET or POST; ?set=true|false sets it)
  /toggleExec   remove or create --exec-file (GET or POST; ?set=true|false)
  /redirect     ?loc=URL[&code=3xx]: redirect, 302 by default
gRPC (--grpc-port): grpc.health.v1; service "" and "readiness" follow /readyz,
"liveness" follows /healthz.
On SIGTERM/SIGINT: keep serving for --sleep-on-term, then exit 0.`

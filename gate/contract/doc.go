// Package contract is the gate's contract with everything that starts or
// talks to it, in one place so the two sides cannot drift apart: the
// injector (admission/inject) and the gate sidecar (`podgate gate`) agree
// on the environment variables the gate is configured with, its ports,
// container name and admin paths; the node, the activator and the gate
// agree on the headers and User-Agents that mark probes and health
// checks (the kubelet's, Knative's and podgate's own), the pod condition
// the gate writes, the answer to a route check (AnswerRouteCheck), and
// the default addresses and domain of `podgate run`.
//
// The Knative names are queue-proxy's own, with the same meaning and
// format, so a pod spec written for Knative's queue-proxy configures the
// gate too (docs/facts.md §4). What Knative lacks carries a PODGATE_
// prefix; a queue-proxy image ignores those.
package contract

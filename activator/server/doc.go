// Package server is podgate's activator server, for `podgate activator`
// on a cluster and for `podgate run`'s front door. It routes a request
// for Host NAME.NAMESPACE.DOMAIN to the pods of Service NAME in NAMESPACE
// — the pods its EndpointSlices (kubernetes.io/service-name: NAME) list —
// that are ready in both views: Kubernetes' (the endpoint's ready
// condition) and the gate's (the activator's own health check of each
// pod's gate). While none is, it holds the request, and answers 504 after
// the request timeout. A pod without a gate (not injected) gets requests
// on the Service's own target port, on Kubernetes' word alone; a Service
// whose pods have no gate and no port to reach them on is answered 503
// with the reason at once, and on a cluster gets a NoRoute Event
// (noroute.go).
//
// One EndpointSlice informer and one Pod informer serve every Service
// (activator/kubebackends.Feed). On a cluster, a Service's target
// (package activator) is made on the first request for it and closed once
// it has been idle for a while, so an activator in front of many Services
// keeps health-checking only the pods of those in use; a host that names
// no Service with EndpointSlices gets 404 at once and is never held.
// `podgate run` knows its workloads up front: it gives them as fixed
// routes, each with its target from the start, some also on a port of
// their own, and, as the only router to its pods, tells a gate when it
// sends it nothing any more.
//
// On a cluster its identity needs list and watch on endpointslices and
// pods, and create and patch on events, nothing else
// (kube/deploy/base/activator). Prometheus metrics,
// /healthz and /readyz are served on a port of their own.
package server

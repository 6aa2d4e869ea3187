// Package kubeactivator is `podgate activator`: the activator on a
// cluster. It routes a request for Host NAME.NAMESPACE.DOMAIN to the pods
// of Service NAME in NAMESPACE — the pods its EndpointSlices
// (kubernetes.io/service-name: NAME) list — that are ready in both views:
// Kubernetes' (the endpoint's ready condition) and the gate's (the
// activator's own health check of each pod's gate). While none is, it
// holds the request, and answers 504 after the request timeout.
//
// One EndpointSlice informer and one Pod informer serve every Service
// (activator/kubebackends.Feed). A Service's target (package
// activator) is made on the first request for it and closed once it has
// been idle for a while, so an activator in front of many Services keeps
// health-checking only the pods of those in use. A host that names no
// Service with EndpointSlices gets 404 at once and is never held.
//
// Its identity needs list and watch on endpointslices and pods, nothing
// else (kube/deploy/base/activator). Prometheus metrics, /healthz and /readyz
// are served on a port of their own.
package kubeactivator

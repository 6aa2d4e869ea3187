// Package api is podgate's local control API: the Kubernetes-shaped HTTP
// endpoints `podgate run` serves from its object store (objstore), and the
// Go client the CLI reads them with.
//
// Paths, list and watch bodies, selectors and error Status objects follow
// the Kubernetes API server, so what a client knows about Kubernetes holds
// here (docs/cli.md, "The control API"):
//
//	GET    /api/v1/pods                                 PodList
//	GET    /api/v1/namespaces/{ns}/pods[/{name}]
//	DELETE /api/v1/namespaces/{ns}/pods/{name}          PodDeleter (the node agent)
//	GET    /api/v1/namespaces/{ns}/pods/{name}/log      LogSource (the node agent)
//	GET    /api/v1/[namespaces/{ns}/]events[/{name}]    EventList
//	GET    /apis/discovery.k8s.io/v1/[namespaces/{ns}/]endpointslices[/{name}]
//	GET    /apis/serving.knative.dev/v1/[namespaces/{ns}/]services[/{name}]
//
// Lists take ?labelSelector=, ?fieldSelector= (metadata.name and
// metadata.namespace everywhere, plus the fields the API server supports
// for pods and events), ?watch=true (newline-delimited watch events, as
// `kubectl get -w` reads them), ?resourceVersion= and ?timeoutSeconds= for
// watches. The server listens on loopback only: it has no authentication.
package api

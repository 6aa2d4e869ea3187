// Package apiserver is podgate's local control API: the Kubernetes-shaped HTTP
// endpoints `podgate run` serves from its object store (objstore). The CLI
// reads them with client-go (package podctl); the resources it serves are
// named in package local/apiserver/resources.
//
// It speaks enough of the Kubernetes REST protocol for client-go (typed
// clientsets, informers, discovery) and kubectl-like clients; paths, list
// and watch bodies, selectors and error Status objects follow the
// Kubernetes API server (docs/cli.md, "The control API"):
//
//	GET    /api/v1/[namespaces/{ns}/]pods[/{name}]      PodList, Pod
//	POST   /api/v1/namespaces/{ns}/pods                 create
//	PUT    /api/v1/namespaces/{ns}/pods/{name}[/status] update (spec and metadata, or status)
//	PATCH  /api/v1/namespaces/{ns}/pods/{name}[/status] merge and strategic merge patches
//	DELETE /api/v1/namespaces/{ns}/pods/{name}          graceful deletion (deletionTimestamp)
//	GET    /api/v1/namespaces/{ns}/pods/{name}/log      LogSource (the node agent)
//	GET    /api/v1/[namespaces/{ns}/]events[/{name}]    EventList; POST, PUT, PATCH
//	GET    /apis/discovery.k8s.io/v1/[namespaces/{ns}/]endpointslices[/{name}]
//	GET    /apis/serving.knative.dev/v1/[namespaces/{ns}/]services[/{name}]
//	GET    /api, /api/v1, /apis, /apis/{group}[/{version}], /version  discovery
//
// Lists take ?labelSelector=, ?fieldSelector= (metadata.name and
// metadata.namespace everywhere, plus the fields the API server supports
// for pods and events) and ?limit= (every list is one page);
// ?watch=true streams newline-delimited watch events from
// ?resourceVersion= (410 Expired when that is too old, so clients list
// again), with ?allowWatchBookmarks=true BOOKMARKs and
// ?sendInitialEvents=true the watch-list protocol; ?timeoutSeconds= ends
// it. A request that accepts a meta.k8s.io Table (kubectl get's Accept
// header) gets one, with the API server's columns from package printers,
// on lists, objects and watches, honouring ?includeObject=. Answers are
// JSON; request bodies are JSON or, as client-go's
// generated clients send them, protobuf. The server listens on loopback
// only: it has no authentication.
package apiserver

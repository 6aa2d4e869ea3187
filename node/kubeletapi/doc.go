// Package kubeletapi is the node's kubelet API: the HTTPS server on the
// node's address (port 10250 by default) that the API server calls for
// `kubectl logs`, `kubectl exec` and `kubectl port-forward` — the
// kubelet's /containerLogs, /exec and /portForward.
//
// Callers are authenticated by client certificate only (the API server's
// --kubelet-client-certificate, signed by the CA the server is given; no
// certificate is a 401, one of another CA fails the handshake) and
// authorized as a kubelet with webhook authorization does: a
// SubjectAccessReview on the API server for verb (from the HTTP method)
// on resource nodes, name the node, subresource from the path — proxy for
// everything this server answers, as for the kubelet's /containerLogs,
// /exec, /attach, /portForward and /run. A denial is a 403.
//
// Exec and port-forward speak the kubelet's side of the SPDY streaming
// protocols (the API server turns kubectl's WebSockets into SPDY towards
// the kubelet): remotecommand v1–v5 (the exit status on the error
// stream, the resize stream of a terminal) and portforward.k8s.io.
// The processes and connections themselves are the node agent's (Pods).
package kubeletapi

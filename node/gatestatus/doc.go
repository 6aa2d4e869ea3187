// Package gatestatus is the node status service: one server per node
// (`podgate node-status`, a DaemonSet on a cluster) through which every
// gate on the node reads its own pod and writes its own pod's condition,
// instead of each gate holding a watch and a right to patch pods/status
// on the API server itself.
//
// It serves the subset of the Kubernetes API that the gate's client
// (gate/podapi, client-go's reflector) uses, for the caller's own pod
// only: a list and a watch of one pod by metadata.name (the watch-list
// form included), and a strategic merge patch of the pod's status that
// sets nothing but the condition podgate.dev/containers-ready. The caller
// is known by the TCP source address of its request: the status.podIP of
// a pod scheduled on this node. No token or header is trusted.
//
// One informer on the node's pods (fieldSelector spec.nodeName) feeds
// every gate's watch, so the API server holds one watch per node however
// many gates run there. Writes are forwarded with a UID precondition and
// coalesced per pod (the latest value wins). What goes wrong shows on the
// pod as Events: GateRequestRefused, GateConditionNotWritten and
// GateNotConnected.
package gatestatus

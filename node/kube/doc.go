// Package kube is `podgate node`: podgate's node agent (package
// runtime) as the kubelet of a real Kubernetes cluster.
//
// The agent reads and writes pods through three interfaces of its own
// (node.PodSource, node.PodWriter, node.EventWriter); locally
// the embedded store implements them, here the kube-apiserver does,
// through client-go and with a node's credential (user system:node:NAME,
// group system:nodes), so the Node authorizer and NodeRestriction limit it
// as they limit a kubelet:
//
//   - Pods: a watch of the pods with spec.nodeName=NODE (one goroutine, in
//     order, removed pods reported gone); status as a strategic-merge
//     patch of pods/status from the status last written, with the pod's
//     UID as precondition, so conditions written by others (a readiness
//     gate's) are never dropped; removal as a delete with grace period 0
//     and the UID precondition, once every container stopped.
//   - Events: the core/v1 events API. A node may create and patch events
//     but not read or delete them: a repeat patches the copy the node
//     created, and old events are left to the API server's TTL.
//
// The Node object and its Lease come from virtual-kubelet's node package
// (NodeController with v1 Leases): registration with capacity,
// allocatable, podCIDR, addresses, the Ready condition and the kubelet
// version, status patches that keep conditions others wrote, and Lease
// renewals. Its PodController is not used: it is a kubelet's pod loop
// for providers that run pods elsewhere (create, update, delete calls,
// status polled back), and podgate's runtime already is a kubelet — it
// watches its pods, honours deletionTimestamp and the grace period,
// writes status as it observes it and removes the pod when done. Running
// both would have two writers of the same pods' status.
//
// Pods reach the API server as themselves: for a pod with the
// service-account token volume the ServiceAccount admission plugin adds
// (every pod that does not set automountServiceAccountToken: false, on
// itself or its service account), the node asks for a token of the pod's
// service account bound to the pod (TokenRequest, the API server's own
// audience, boundObjectRef the Pod), renews it at 80% of its life, and
// writes it with the volume's ca.crt and namespace to a directory of the
// pod's, with a kubeconfig reading them: $KUBECONFIG in every container,
// with KUBERNETES_SERVICE_HOST and _PORT naming the API server as pods
// reach it (Config.APIServerForPods; no kube-proxy, so not the
// ClusterIP). On a pod network with the node root, where the node mounts
// pods' volumes (package node/volumes), that directory is the volume:
// each container sees the files at its mount path
// (/var/run/secrets/kubernetes.io/serviceaccount), where client-go's
// in-cluster configuration reads them, and the node reads the configMaps
// and secrets of pods' other volumes with its own credential (the Node
// authorizer allows those its pods name). Elsewhere containers share the
// node's mount namespace and have $KUBECONFIG only.
//
// With Config.KubeletAPI the node serves the kubelet API (package
// node/kubeletapi) on its address, port 10250 unless told otherwise,
// published as the Node's daemonEndpoints.kubeletEndpoint: the API server
// calls it for `kubectl logs`, `exec` and `port-forward`. The listener is
// opened before the Node registers (its port goes into the Node) and
// served once the agent runs, until the node has drained.
//
// Pod addresses come from the node's pod network, whose range is also the
// Node's spec.podCIDR (the controller manager allocates none): with
// Config.Network (package node/netns/nodenet, as `podgate cluster up` and
// `podgate node --pod-network netns` run it) each pod has a network
// namespace and a real address; without, pods take host loopback
// addresses of --pod-cidr, which the API server refuses in
// EndpointSlices (the node warns at start).
//
// With a pod network, a liveness or startup kill waits (package
// node/kube/withdrawal, up to Config.WithdrawTimeout) until no
// EndpointSlice lists the pod's address as ready: the agent has written Ready=False first, and the
// EndpointSlice controller follows that write a little later. Reading
// EndpointSlices is beyond a kubelet's rights; ClusterRole
// withdrawal.Role, bound to group system:nodes, grants it, and without
// it the node kills without waiting.
package kube

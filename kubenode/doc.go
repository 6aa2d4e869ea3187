// Package kubenode is `podgate node`: podgate's node agent (package
// runtime) as the kubelet of a real Kubernetes cluster.
//
// The agent reads and writes pods through three interfaces of its own
// (runtime.PodSource, runtime.PodWriter, runtime.EventWriter); locally
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
// Pod addresses come from the node's --pod-cidr, which is also the Node's
// spec.podCIDR (the controller manager allocates none): on host loopback
// for now, so the API server refuses EndpointSlices of these pods until
// pods get addresses of a network namespace of their own.
package kubenode

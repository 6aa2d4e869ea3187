// Package nodenet gives the node agent (package runtime) its pods'
// networks from package podnet: each pod a network namespace of its own,
// with an address from the cluster's pod CIDR on eth0, and every process
// of the pod — containers, exec probes, exec hooks — started inside it.
// The two packages know nothing of each other; this is the adapter
// between them, for the composer of a node on a cluster:
//
//	c, err := netns.SetupCluster(cidr) // in the cluster's namespace
//	n := nodenet.New(c)
//	agent, err := node.New(node.Options{Network: n, HostIP: n.HostIP(), …})
//
// The node reaches each pod at its IP through the bridge, so the agent's
// httpGet, tcpSocket and grpc probes and httpGet hooks are dialed from
// the node to the pod IP, as the kubelet's are.
//
// A program that uses it should lock its main goroutine to the main
// thread (runtime.LockOSThread in an init function): see
// netns.ErrNetnsNotRestored.
package nodenet

// Package netns gives the pods of a node real, non-loopback addresses
// without touching the host's network. The kube-apiserver refuses
// EndpointSlice addresses in 127.0.0.0/8, so pods on a real control
// plane need pod IPs; the workplace's rule is that traffic goes only to
// loopback or into network namespaces podgate created itself. So:
//
//   - The whole cluster (etcd, kube-apiserver, controllers, scheduler and
//     the node agent) runs in one network namespace of its own, the
//     cluster namespace: StartInNewNetns starts that child process with
//     CLONE_NEWNET. Inside it SetupCluster brings lo up and creates the
//     bridge podgate0 carrying the node's address, the first address of
//     the pod CIDR (10.244.0.1/16 for 10.244.0.0/16).
//   - Each pod gets a network namespace of its own, held only by an open
//     file descriptor (nothing is bind-mounted under /var/run/netns, so a
//     SIGKILL leaves nothing behind): lo up, eth0 (one end of a veth pair)
//     with the pod's IP and a default route via the node's address, the
//     other end on the bridge. Two replicas can both bind 0.0.0.0:8080,
//     and the node reaches each at its pod IP through the bridge.
//   - A pod's processes start inside its namespace: Netns.Start forks from
//     an OS thread that has setns'd into it (the child inherits the
//     forking thread's namespace). Probes over the network are dialed by
//     the node to the pod IP and need no setns.
//   - The host reaches the cluster through loopback ports podgate owns:
//     the host process listens on 127.0.0.1, hands the listening socket to
//     the cluster child (PassListener / InheritedListeners), and the child
//     accepts on it and dials the target inside its own namespace
//     (Forward). The socket stays in the host's namespace, the dial
//     happens in the cluster's. The other way round, Netns.Listen opens a
//     listener inside a namespace from a process outside it.
//
// Nothing here changes the namespace it is called from except
// SetupCluster, which refuses the host's namespace (the one of the
// outermost ancestor process it can read) and any namespace with an
// interface up or addressed that it did not create.
//
// Libraries: github.com/vishvananda/netlink speaks rtnetlink for links,
// addresses and routes — the library the CNI plugins, Docker's
// libnetwork and kube-router use, kept up to date, with typed links and
// the veth peer-namespace attribute this package relies on to create eth0
// directly inside the pod's namespace. Its package-level calls open a
// fresh netlink socket per call on the calling thread, so inside Do they
// act on the pod's namespace and elsewhere on the cluster's. The
// namespace switches themselves (unshare, setns) are done here with
// golang.org/x/sys/unix rather than with netlink's handles-in-a-namespace
// (and its companion github.com/vishvananda/netns): those unlock the
// thread even when the way back fails, and a thread left in a pod's
// namespace must never return to Go's thread pool.
//
// Needs root, or CAP_SYS_ADMIN (unshare, setns) and CAP_NET_ADMIN
// (links, addresses, routes); Preflight says which is missing. A
// rootless mode in a user namespace is not built. IPv4 only.
package netns

// Package cluster is `podgate cluster up` and `podgate cluster down`: a
// whole Kubernetes cluster on this machine — the real control plane
// (package controlplane) and podgate's node agent as its kubelet (package
// node/kube) — without docker, in a network namespace of its own.
//
// Two processes:
//
//   - The host side (Up), in the caller's namespaces: it gets the control
//     plane's binaries (a cache hit, or a build whose progress it shows),
//     checks it may create network namespaces (netns.Preflight), opens the
//     loopback listener of the API server on the host, and starts the
//     cluster process: this binary again, with the hidden subcommand
//     `podgate cluster child`, in a new network namespace
//     (netns.StartInNewNetns) and a session of its own, handing it the
//     listener (and the front door's). Once the node is Ready it writes
//     DIR/kubeconfig (the admin's credential, server
//     https://127.0.0.1:PORT) and says how to use it; then it installs
//     podgate (package kube/install: podgate's image, built while the
//     control plane starts, in the layout DIR/image; kube/deploy/base applied
//     with it; the webhook and the activator ready) and prints the front
//     door. Ctrl-C stops the cluster process and waits for it.
//   - The cluster process (Child), inside its namespace: the bridge with
//     the pod CIDR's first address (the node's, netns.SetupCluster), the
//     control plane with the API server on all addresses of the namespace
//     and advertising the node's address, the node agent with that
//     address as its InternalIP (running the images of DIR/image) and
//     its kubelet API on that address, port 10250, with a serving
//     certificate of the cluster's CA (kubectl logs, exec, port-forward), the
//     forward from the host's listener to the API server, and the front
//     door's to the activator's ready endpoints. It stops the node first (pods terminate
//     gracefully and are deleted), then the control plane, then the
//     network.
//
// Everything the cluster runs is in the cluster process's session: Down
// (for a cluster left behind, by the pid file) and the tests find every
// process of it there. Nothing is mounted and no namespace is named, so
// when the last process goes, the namespaces go too (the containers'
// volumes are mounted in each container process's private mount
// namespace, which goes with it).
package cluster

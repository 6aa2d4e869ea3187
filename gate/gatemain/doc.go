// Package gatemain is `podgate gate` put together: the gate's environment
// decoded, its status source chosen (none, the pod on the cluster's API
// server, or a URL: the control API of `podgate run` or the node status
// service on a cluster), the address it listens on, the gate
// served until SIGTERM and drained; and `podgate gate wait`, the native
// sidecar's startup probe. The command itself only turns flags into these
// calls.
package gatemain

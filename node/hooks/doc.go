// Package hooks runs a container's lifecycle hook handler as the kubelet
// does: exec (with $(VAR) expanded from the container's static env), an
// HTTP GET against the pod IP or the hook's host, or sleep. A tcpSocket
// handler is deprecated and ignored, by the kubelet too. What to do about
// a failure (the FailedPreStopHook event; the kill goes on) is the
// caller's.
package hooks

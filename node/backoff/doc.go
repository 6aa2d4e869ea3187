// Package backoff is the kubelet's CrashLoopBackOff timing for one
// container: how long to wait, after a death, before starting it again.
// It holds no clock: times come in, a delay goes out, so the rule is
// tested without waiting and the node agent times it on its own clock.
package backoff

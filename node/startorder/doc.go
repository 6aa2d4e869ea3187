// Package startorder is the order the kubelet starts a pod's containers
// in, as a decision over what the pod worker knows, without a clock or
// processes: the init containers one at a time in spec order — a regular
// one must exit 0, a native sidecar must be Started (its startup probe
// passed, or it runs and has none) before the next one starts — then
// every main container together, with the native sidecars restarted
// whenever they are not running; and when the pod is complete (every main
// container finished for good) or has failed (a regular init container
// failed for good). Whether a container that ended starts again at all
// is the restart policy's (package node/restart); when, the back-off's
// (package node/backoff).
package startorder

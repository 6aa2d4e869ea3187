// Package termination is how the kubelet ends a pod, as decisions over
// what the pod worker knows, without a clock or processes: the grace
// period every container of a terminating pod shares (a later deletion
// may only shorten it; 0 kills everything at once), the deadline of a
// completed pod's sidecars, and the order the containers stop in: the
// regular containers together, then the native sidecars one at a time,
// the last one first, each once the one after it has exited. The pod
// worker carries the decisions out; package node/kill stops one
// container.
package termination

// Package podstatus is the PodStatus the kubelet computes, as pure
// functions over what the node agent knows of a pod and its containers:
// the phase (the kubelet's getPhase), each container's status, and the
// pod conditions in the kubelet's order and words (PodReadyToStartContainers,
// Initialized, Ready with its readiness gates, ContainersReady,
// PodScheduled), each keeping its lastTransitionTime until its status
// changes.
//
// The node agent (package runtime) keeps the state and the transition
// times; this package holds no state and starts nothing.
package podstatus

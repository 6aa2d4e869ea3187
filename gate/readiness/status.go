package readiness

// ContainerStatus is what a status source (the node agent locally, the API
// server on Kubernetes) says about one container of the gate's pod.
type ContainerStatus struct {
	Name string
	// Ready is the kubelet's (or node agent's) verdict: running, started,
	// and its readiness probe (if it kept one, i.e. an exec probe) passing.
	Ready bool
	// Running is false while the container is waiting or terminated.
	Running bool
	// RestartCount and ContainerID change when the container is replaced.
	RestartCount int32
	ContainerID  string
	// Message says why it is not ready (waiting reason, last termination),
	// for /readyz?verbose.
	Message string
}

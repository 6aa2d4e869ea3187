package events

// Event reasons the node agent records, as the kubelet names them.
const (
	ReasonScheduled    = "Scheduled"
	ReasonPulled       = "Pulled"
	ReasonCreated      = "Created"
	ReasonStarted      = "Started"
	ReasonKilling      = "Killing"
	ReasonUnhealthy    = "Unhealthy"
	ReasonProbeWarning = "ProbeWarning"
	ReasonBackOff      = "BackOff"
	ReasonFailed       = "Failed"
	// ReasonFailedPreStopHook is the event of a preStop hook that failed;
	// the kill goes on regardless, as the kubelet's does.
	ReasonFailedPreStopHook = "FailedPreStopHook"
	// ReasonFailedMount is the event of a pod whose
	// node.PodExtras.Prepare failed (it is tried again): the kubelet's
	// for a volume it could not set up, which is what node/kube's Prepare
	// makes (the pod's service-account token, CA and namespace).
	ReasonFailedMount = "FailedMount"
	// ReasonSecurityContextNotEnforced is podgate's own (a kubelet
	// enforces every field): a warning, at each start of a container,
	// naming a field of its securityContext the node does not enforce
	// (package node/seccontext).
	ReasonSecurityContextNotEnforced = "SecurityContextNotEnforced"
)

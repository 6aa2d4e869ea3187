package contract

// What the gate's start, its drain and its routed probes add to the
// contract: the admin paths the injector's hooks and probes call, the
// header a routed probe's answer carries, and who may end a drain early.

const (
	// EnvOnlyRouter names the only thing that routes traffic to the pod,
	// when that is known. Its one value, OnlyRouterActivator, says that
	// podgate's activator (the front door of `podgate run`) is the pod's
	// only way in: once it confirms (POST UnroutedPath) that it no longer
	// routes here and nothing is in flight, the drain ends without waiting
	// out the quiet period. Unset: routers unknown (a Kubernetes Service,
	// an ingress, several activators), the quiet period always runs.
	EnvOnlyRouter = "PODGATE_ONLY_ROUTER"
	// OnlyRouterActivator is EnvOnlyRouter's value for podgate's activator.
	OnlyRouterActivator = "activator"

	// LivezPath answers 200 while the gate serves, ready or not: the
	// gate's startup check waits for it.
	LivezPath = "/livez"
	// StartDrainPath is the gate's own preStop hook: the pod is being
	// deleted, so the drain starts now (a native sidecar's SIGTERM comes
	// only after the other containers have stopped).
	StartDrainPath = "/start-drain"
	// UnroutedPath is where the router named by EnvOnlyRouter confirms,
	// with POST and ?pod=<name>, that it sends the pod nothing any more.
	UnroutedPath = "/unrouted"
)

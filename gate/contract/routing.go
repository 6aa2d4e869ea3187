package contract

import (
	"crypto/rand"
	"encoding/hex"

	corev1 "k8s.io/api/core/v1"
)

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
	// UnroutedIf, set to UnroutedIfDraining on an UnroutedPath call, makes
	// the confirmation count only if the gate is draining already (409
	// otherwise): what a router that stops sends to pods it does not know
	// to be terminating, so that a pod that outlives it is not left with a
	// confirmation its router's successor cannot speak for.
	UnroutedIf         = "if"
	UnroutedIfDraining = "draining"

	// EnvAdminToken is the pod's admin token: a call that changes the
	// gate's state (StartDrainPath, UnroutedPath, DrainPath) is accepted
	// from the pod itself (a connection whose source address is the
	// address it reached: the pod's loopback or its pod IP) or with this
	// token in AdminTokenHeader. The injector writes a fresh one per
	// injection (per pod through the webhook) into the gate's environment
	// and into the headers of the preStop hooks it writes; the activator
	// reads it from the pod's spec. Unset (a pod spec written for
	// queue-proxy): only the pod itself may start or end a drain early,
	// and DrainPath stays open as queue-proxy's is (the kubelet's hook
	// cannot be told from a stranger's), without changing readiness.
	EnvAdminToken = "PODGATE_ADMIN_TOKEN"
	// AdminTokenHeader carries EnvAdminToken's value on an admin call.
	AdminTokenHeader = "Podgate-Admin-Token"
)

// adminTokenBytes is the admin token's entropy: 128 bits.
const adminTokenBytes = 16

// NewAdminToken is a fresh random admin token (hex, 32 characters).
func NewAdminToken() string {
	// crypto/rand.Read never fails (it crashes the program instead).
	b := make([]byte, adminTokenBytes)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// AdminTokenOf is the admin token in a gate container's environment, ""
// when it has none or gate is nil.
func AdminTokenOf(gate *corev1.Container) string {
	if gate == nil {
		return ""
	}
	for _, e := range gate.Env {
		if e.Name == EnvAdminToken && e.ValueFrom == nil {
			return e.Value
		}
	}
	return ""
}

// validAdminToken: what a header value may carry, visible ASCII without
// spaces, at most 256 bytes.
func validAdminToken(t string) bool {
	if t == "" || len(t) > 256 {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] <= ' ' || t[i] > '~' {
			return false
		}
	}
	return true
}

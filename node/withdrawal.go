package node

import (
	"context"
	"net/netip"
)

// EndpointWithdrawal holds a liveness or startup kill until the pod's
// endpoint no longer takes traffic. The agent writes the pod's status
// (the container not ready) before every such kill; where the endpoints
// follow that write only later — a cluster's EndpointSlice controller
// works from a watch of the pods — the kill would otherwise race the
// withdrawal, and requests would still reach a container being killed.
// The local control plane updates the endpoints within the status write
// and needs none.
type EndpointWithdrawal interface {
	// WaitWithdrawn returns once no endpoint lists address ip of pod
	// namespace/name as ready, once ctx ends (the kill was forced or the
	// container exited meanwhile), or at a bound of its own: a kill is
	// held up, never called off.
	WaitWithdrawn(ctx context.Context, namespace, name string, ip netip.Addr)
}

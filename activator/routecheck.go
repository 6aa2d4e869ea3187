package activator

import (
	"fmt"
	"net/http"

	"github.com/podgate/podgate/wire"
)

// IsRouteCheck reports a networking layer's check that a route is
// programmed: K-Network-Probe: probe. In Knative the first hop that
// knows the route (the activator, or queue-proxy) answers it by echoing
// K-Network-Hash, so that an ingress learns a host routes before it sends
// traffic there. The front door answers it for every host it routes,
// without touching a pod: a route check must neither wait for a ready
// pod nor count as a request.
func IsRouteCheck(r *http.Request) bool {
	return r.Header.Get(wire.NetworkProbeHeader) == wire.NetworkProbeIngress
}

// AnswerRouteCheck answers a route check for a routed host: 200 with
// K-Network-Hash echoed, or 400 when the check carries no hash (as
// Knative's probe handler answers).
func AnswerRouteCheck(w http.ResponseWriter, r *http.Request) {
	hash := r.Header.Get(wire.NetworkHashHeader)
	if hash == "" {
		http.Error(w, fmt.Sprintf("a probe request must contain a non-empty %q header", wire.NetworkHashHeader), http.StatusBadRequest)
		return
	}
	w.Header().Set(wire.NetworkHashHeader, hash)
	w.WriteHeader(http.StatusOK)
}

package contract

import (
	"fmt"
	"net/http"
)

// IsRouteCheck reports a networking layer's check that a route is
// programmed: K-Network-Probe: probe. In Knative the first hop that knows
// the route (the activator, or queue-proxy) answers it by echoing
// K-Network-Hash, so that an ingress learns that a host routes before it
// sends traffic there. podgate's front door answers it for every host it
// routes without touching a pod (a route check must neither wait for a
// ready pod nor count as a request); the gate answers it for its pod.
func IsRouteCheck(r *http.Request) bool {
	return r.Header.Get(NetworkProbeHeader) == NetworkProbeIngress
}

// AnswerRouteCheck answers a route check as Knative's first hop on the
// route does (the activator, or queue-proxy): 200 with NetworkHashHeader
// echoed, or 400 when the check carries no hash. Who answers decides
// whether the route is there; this is only the answer's form, shared by
// the gate and the front door so that they cannot drift apart.
func AnswerRouteCheck(w http.ResponseWriter, r *http.Request) {
	hash := r.Header.Get(NetworkHashHeader)
	if hash == "" {
		http.Error(w, fmt.Sprintf("a probe request must contain a non-empty %q header", NetworkHashHeader), http.StatusBadRequest)
		return
	}
	w.Header().Set(NetworkHashHeader, hash)
	w.WriteHeader(http.StatusOK)
}

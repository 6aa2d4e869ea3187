package activator

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/podgate/podgate/gate/contract"
)

// DefaultDomain is Knative's default domain.
const DefaultDomain = contract.Domain

// Router is the front door: it sends a request to the handler of the
// service its Host names, NAME.NAMESPACE.DOMAIN (Knative's URL scheme).
// Routes can change while it serves.
type Router struct {
	domain string

	mu     sync.RWMutex
	routes map[string]http.Handler // by host, lower case, no port
}

// NewRouter returns a router for domain (DefaultDomain when empty).
func NewRouter(domain string) *Router {
	if domain == "" {
		domain = DefaultDomain
	}
	return &Router{domain: strings.ToLower(strings.Trim(domain, ".")), routes: map[string]http.Handler{}}
}

// Host is the host name of a service: NAME.NAMESPACE.DOMAIN.
func (rt *Router) Host(namespace, name string) string {
	return strings.ToLower(name + "." + namespace + "." + rt.domain)
}

// URL is the service's URL as Knative reports it in status.url.
func (rt *Router) URL(namespace, name string) string { return "http://" + rt.Host(namespace, name) }

// Set routes the service's host to h, replacing any earlier handler.
func (rt *Router) Set(namespace, name string, h http.Handler) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.routes[rt.Host(namespace, name)] = h
}

// Delete removes the service's route.
func (rt *Router) Delete(namespace, name string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	delete(rt.routes, rt.Host(namespace, name))
}

// Handler returns the handler for a Host header value, ignoring case, a
// port and a trailing dot.
func (rt *Router) Handler(host string) (http.Handler, bool) {
	host = normalizeHost(host)
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	h, ok := rt.routes[host]
	return h, ok
}

func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h, ok := rt.Handler(r.Host); ok {
		if contract.IsRouteCheck(r) {
			contract.AnswerRouteCheck(w, r)
			return
		}
		h.ServeHTTP(w, r)
		return
	}
	http.Error(w, fmt.Sprintf("no service for host %q (hosts are NAME.NAMESPACE.%s)", r.Host, rt.domain), http.StatusNotFound)
}

func normalizeHost(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

package server

import (
	"fmt"
	"io"
	"net"
)

// announced is what `podgate run` prints of a fixed route.
type announced struct {
	label string // e.g. Deployment/web, for messages
	// port is the route's own listener (a service port), if any.
	port net.Addr
	// ready: the ready line was printed.
	ready bool
}

// PrintCurls prints one ready-to-paste request per route and per service
// port. Requests sent before a pod is ready are held until one is; a line
// per route follows on Config.Announce once it takes traffic.
func (s *Server) PrintCurls(w io.Writer) {
	addr := s.ln.Addr().String()
	fmt.Fprintf(w, "podgate: front door on http://%s (routes by Host: NAME.NAMESPACE.%s; holds requests until a pod is ready)\n", addr, s.cfg.Domain)
	for _, e := range s.routes() {
		fmt.Fprintf(w, "podgate: curl -H 'Host: %s' http://%s/    # %s\n", s.targets.host(e.namespace, e.name), addr, e.route.label)
	}
	for _, e := range s.routes() {
		if e.route.port != nil {
			fmt.Fprintf(w, "podgate: curl http://%s/    # %s on its own port (--service-port)\n", e.route.port, e.route.label)
		}
	}
	s.announceMu.Lock()
	s.curlsPrinted = true
	s.announceMu.Unlock()
	for _, e := range s.routes() {
		s.announceReady(e)
	}
}

// routes is the fixed routes' entries in Config.Routes' order.
func (s *Server) routes() []*entry {
	out := make([]*entry, 0, len(s.cfg.Routes))
	for _, r := range s.cfg.Routes {
		out = append(out, s.targets.byHost[s.targets.host(r.Namespace, r.Name)])
	}
	return out
}

// announceReady prints, once per route and after the curl lines, that the
// route takes traffic: a pod is usable by the activator and its endpoint
// is ready (so the pod is Ready too, whatever the fast path let through
// earlier).
func (s *Server) announceReady(e *entry) {
	if e.route == nil || s.cfg.Announce == nil {
		return
	}
	s.announceMu.Lock()
	defer s.announceMu.Unlock()
	if !s.curlsPrinted || e.route.ready {
		return
	}
	ready, pods := 0, 0
	for _, b := range e.target.Status().Backends {
		if b.Terminating {
			continue
		}
		pods++
		if b.Usable && b.EndpointReady {
			ready++
		}
	}
	if ready == 0 {
		return
	}
	e.route.ready = true
	fmt.Fprintf(s.cfg.Announce, "podgate: %s is ready (%d/%d pods): curl -H 'Host: %s' http://%s/\n",
		e.name+"."+e.namespace, ready, pods, s.targets.host(e.namespace, e.name), s.ln.Addr())
}

package testapp

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// lookupTimeout bounds /resolve and /fetch: they answer about the pod's
// network (its resolv.conf, the cluster's Service routing), not wait on it.
const lookupTimeout = 10 * time.Second

// resolve answers the addresses Go's resolver finds for ?name= from inside
// the pod, one per line, sorted: with the pod's /etc/resolv.conf, so a
// cluster DNS name shows that the pod's DNS works.
func (s *Server) resolve(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	if name == "" {
		http.Error(w, "resolve: ?name= is required", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), lookupTimeout)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, name)
	if err != nil {
		http.Error(w, fmt.Sprintf("resolve %s: %v", name, err), http.StatusBadGateway)
		return
	}
	slices.Sort(addrs)
	for _, a := range addrs {
		fmt.Fprintln(w, a)
	}
}

// fetch GETs ?url= (http only) from inside the pod and answers the status
// line's code and the body: a Service's name or ClusterIP there shows that
// the pod reaches Services as a pod on a real cluster does.
func (s *Server) fetch(w http.ResponseWriter, r *http.Request) {
	target, err := url.Parse(r.URL.Query().Get("url"))
	if err != nil || target.Scheme != "http" || target.Host == "" {
		http.Error(w, fmt.Sprintf("fetch: ?url= must be an http URL (%v)", err), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), lookupTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		http.Error(w, fmt.Sprintf("fetch: %v", err), http.StatusBadRequest)
		return
	}
	if h := r.URL.Query().Get("host"); h != "" {
		req.Host = h
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		http.Error(w, fmt.Sprintf("fetch %s: %v", target, err), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	fmt.Fprintf(w, "%d\n", resp.StatusCode)
	_, _ = io.Copy(w, io.LimitReader(resp.Body, 1<<20))
}

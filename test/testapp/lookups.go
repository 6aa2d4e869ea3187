package testapp

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// fetch sends a request to ?url= from inside the pod and answers the
// status line's code and the body: a Service's name or ClusterIP there
// shows that the pod reaches Services as a pod on a real cluster does,
// and with the pod's own credentials it shows what a container of the
// pod may do with them. The request is a GET unless ?method= names
// another; the body of the request to /fetch is sent on, with
// ?content-type=; ?host= sets the Host header. With
// ?token=serviceaccount it carries the pod's service-account token
// (Authorization: Bearer) and trusts the CA mounted beside it, for an
// https:// URL of the API server.
func (s *Server) fetch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	target, err := url.Parse(q.Get("url"))
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		http.Error(w, fmt.Sprintf("fetch: ?url= must be an http or https URL (%v)", err), http.StatusBadRequest)
		return
	}
	method := q.Get("method")
	if method == "" {
		method = http.MethodGet
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, fmt.Sprintf("fetch: the request's body: %v", err), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), lookupTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, target.String(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, fmt.Sprintf("fetch: %v", err), http.StatusBadRequest)
		return
	}
	if h := q.Get("host"); h != "" {
		req.Host = h
	}
	if ct := q.Get("content-type"); ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	transport := &http.Transport{DisableKeepAlives: true}
	switch tok := q.Get("token"); tok {
	case "":
	case "serviceaccount":
		if err := s.withServiceAccount(req, transport); err != nil {
			http.Error(w, fmt.Sprintf("fetch: %v", err), http.StatusBadRequest)
			return
		}
	default:
		http.Error(w, fmt.Sprintf("fetch: ?token=%q: only serviceaccount is known", tok), http.StatusBadRequest)
		return
	}
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		http.Error(w, fmt.Sprintf("fetch %s: %v", target, err), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	fmt.Fprintf(w, "%d\n", resp.StatusCode)
	_, _ = io.Copy(w, io.LimitReader(resp.Body, 1<<20))
}

// withServiceAccount puts the pod's service-account token on req and
// makes transport trust the CA mounted beside it (when there is one).
// Both are read at each request: the kubelet renews the token in place.
func (s *Server) withServiceAccount(req *http.Request, transport *http.Transport) error {
	dir := s.cfg.ServiceAccountDir
	if dir == "" {
		dir = DefaultServiceAccountDir
	}
	tok, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		return fmt.Errorf("the pod's service-account token: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	ca, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("the pod's service-account CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return fmt.Errorf("%s holds no PEM certificate", filepath.Join(dir, "ca.crt"))
	}
	transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return nil
}

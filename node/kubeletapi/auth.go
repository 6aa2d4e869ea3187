package kubeletapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// User is an authenticated caller.
type User struct {
	Name   string
	Groups []string
}

// Attributes is what a request asks of the node, in RBAC's words.
type Attributes struct {
	Verb        string // get, create, update, patch, delete
	Node        string
	Subresource string // proxy, log, stats, metrics, spec
}

// Authorizer decides whether user may do attrs; reason says why not.
type Authorizer interface {
	Authorize(ctx context.Context, user User, attrs Attributes) (allowed bool, reason string, err error)
}

// SubjectAccessReviews asks the API server, as a kubelet with
// --authorization-mode=Webhook does (the node's own credential may
// create SubjectAccessReviews: the Node authorizer grants it).
type SubjectAccessReviews struct {
	Client authorizationclient.SubjectAccessReviewInterface
}

// Authorize implements Authorizer.
func (r SubjectAccessReviews) Authorize(ctx context.Context, user User, attrs Attributes) (bool, string, error) {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   user.Name,
		Groups: user.Groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: attrs.Verb, Resource: "nodes", Subresource: attrs.Subresource, Name: attrs.Node,
		},
	}}
	got, err := r.Client.Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("SubjectAccessReview: %w", err)
	}
	return got.Status.Allowed, got.Status.Reason, nil
}

type userKey struct{}

// authenticate takes the caller from its verified client certificate —
// the user its common name, its groups the organizations, plus
// system:authenticated, as the API server's x509 authenticator reads one
// — and answers 401 without one (the kubelet with anonymous auth off).
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.PeerCertificates) == 0 {
			s.log.Debug("kubelet API: a caller without a client certificate", "remote", r.RemoteAddr, "path", r.URL.Path)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		subj := r.TLS.PeerCertificates[0].Subject
		if subj.CommonName == "" {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		u := User{Name: subj.CommonName, Groups: append(append([]string{}, subj.Organization...), "system:authenticated")}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)))
	})
}

// authorize answers 403 unless the caller may do what the request asks
// (attributesOf).
func (s *Server) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := r.Context().Value(userKey{}).(User)
		attrs := attributesOf(r, s.cfg.NodeName)
		ok, reason, err := s.cfg.Authorizer.Authorize(r.Context(), u, attrs)
		if err != nil {
			s.log.Warn("kubelet API: authorization failed", "user", u.Name, "err", err)
			http.Error(w, "Authorization error (user="+u.Name+", verb="+attrs.Verb+", resource=nodes, subresource="+attrs.Subresource+")", http.StatusInternalServerError)
			return
		}
		if !ok {
			s.log.Info("kubelet API: forbidden", "user", u.Name, "verb", attrs.Verb, "subresource", attrs.Subresource, "reason", reason)
			http.Error(w, "Forbidden (user="+u.Name+", verb="+attrs.Verb+", resource=nodes, subresource="+attrs.Subresource+")", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// attributesOf maps a request as the kubelet does: the verb from the
// method, the subresource from the path's first segment — stats, metrics,
// logs (nodes/log), spec — and proxy for every other path, among them
// /containerLogs, /exec, /attach, /portForward and /run.
func attributesOf(r *http.Request, node string) Attributes {
	verb := "get"
	switch r.Method {
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	}
	sub := "proxy"
	first, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	switch first {
	case "stats", "metrics", "spec":
		sub = first
	case "logs":
		sub = "log"
	}
	return Attributes{Verb: verb, Node: node, Subresource: sub}
}

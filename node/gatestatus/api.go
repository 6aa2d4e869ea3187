package gatestatus

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Handler serves the gates' API, /metrics, /healthz and /readyz.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.pods.isSynced() {
			http.Error(w, "the node's pods are not listed yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	if s.gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("GET /api/v1/namespaces/{ns}/pods", s.serveListOrWatch)
	mux.HandleFunc("PATCH /api/v1/namespaces/{ns}/pods/{name}/status", s.servePatch)
	mux.HandleFunc("/", s.serveOther)
	return mux
}

// servedAPI says what this service answers, for refusals.
const servedAPI = "the node status service serves a gate its own pod only: GET /api/v1/namespaces/NS/pods?fieldSelector=metadata.name=NAME (list or watch) and a strategic merge patch of /api/v1/namespaces/NS/pods/NAME/status setting the condition podgate.dev/containers-ready"

func (s *Service) serveOther(w http.ResponseWriter, r *http.Request) {
	s.metrics.requests.WithLabelValues(verbOther, outcomeRefused).Inc()
	writeStatus(w, forbidden(fmt.Sprintf("%s %s from %s: %s", r.Method, r.URL.Path, r.RemoteAddr, servedAPI)))
}

// forbidden is a 403 Status, as the API server words one, for pods.
func forbidden(msg string) error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", fmt.Errorf("%s", msg))
}

// writeStatus answers err as the API server answers errors: a
// metav1.Status with its code; an error without one is a 500.
func writeStatus(w http.ResponseWriter, err error) {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		se = apierrors.NewInternalError(err)
	}
	status := se.Status()
	status.Kind, status.APIVersion = "Status", "v1"
	writeJSON(w, int(status.Code), &status)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// podName is the one pod a list or watch asks for: its fieldSelector
// must be exactly metadata.name=NAME, and it may have no labelSelector.
func podName(r *http.Request) (string, error) {
	q := r.URL.Query()
	if q.Get("labelSelector") != "" {
		return "", fmt.Errorf("labelSelector %q: only fieldSelector=metadata.name=NAME is served", q.Get("labelSelector"))
	}
	sel, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		return "", fmt.Errorf("fieldSelector %q: %w", q.Get("fieldSelector"), err)
	}
	reqs := sel.Requirements()
	name, ok := sel.RequiresExactMatch("metadata.name")
	if !ok || len(reqs) != 1 || name == "" {
		return "", fmt.Errorf("fieldSelector %q: only metadata.name=NAME (the caller's own pod) is served", q.Get("fieldSelector"))
	}
	return name, nil
}

// serveListOrWatch answers a gate's list or watch of its own pod.
func (s *Service) serveListOrWatch(w http.ResponseWriter, r *http.Request) {
	verb := verbList
	if isWatch(r) {
		verb = verbWatch
	}
	ns := r.PathValue("ns")
	name, err := podName(r)
	if err != nil {
		s.refuse(w, r, verb, nil, "BadSelector", fmt.Sprintf("%s of pods in %s from %s refused: %v", verb, ns, r.RemoteAddr, err))
		return
	}
	caller, ok := s.identify(w, r, verb, ns, name)
	if !ok {
		return
	}
	if verb == verbWatch {
		s.serveWatch(w, r, caller)
		return
	}
	st, rv, _ := s.pods.get(keyOf(ns, name))
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: fmt.Sprint(rv)}}
	if st != nil && !st.deleted && st.pod.UID == caller.UID {
		list.Items = []corev1.Pod{*st.pod}
	}
	s.metrics.requests.WithLabelValues(verbList, outcomeOK).Inc()
	writeJSON(w, http.StatusOK, list)
}

func isWatch(r *http.Request) bool {
	v := r.URL.Query().Get("watch")
	return v == "true" || v == "1"
}

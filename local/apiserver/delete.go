package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podgate/podgate/local/apiserver/resources"
)

// PodDeleter is told of pod deletions. It is transitional: it lets a node
// agent that terminates pods on request (rather than by watching for
// metadata.deletionTimestamp, as a kubelet does) keep working while the
// API already deletes the way the API server does.
//
// DeletePod starts graceful termination of the pod and returns once it has
// started. It must not wait for the containers to exit; termination goes on
// after the call and after ctx (the HTTP request's) is done.
// opts.GracePeriodSeconds, when set, replaces the pod's
// terminationGracePeriodSeconds (0: kill at once). Return a StatusError
// (apierrors.NewNotFound, …) to choose the HTTP status; any other error is
// a 500.
type PodDeleter interface {
	DeletePod(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error
}

// deletePod answers DELETE .../pods/{name} like the API server (see
// objstore.Store.DeletePod): a running pod bound to a node gets its
// deletionTimestamp and is answered 200 with the pod as it is now; a pod
// deleted at once is answered 200 with a Success Status.
//
// With a PodDeleter, it is called after the timestamp is set; a deletion
// that removes the pod at once is left to it entirely (it ends the pod's
// processes, then removes it), so no pod outlives its object unnoticed.
func (s *Server) deletePod(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	opts, err := deleteOptions(r)
	if err != nil {
		writeError(w, s.cfg.Logger, err)
		return
	}
	before, err := s.cfg.Store.Pods.Get(ns, name)
	if err != nil {
		writeError(w, s.cfg.Logger, err)
		return
	}
	finished := before.Status.Phase == corev1.PodSucceeded || before.Status.Phase == corev1.PodFailed
	immediate := before.Spec.NodeName == "" || finished || (opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds == 0)
	if s.cfg.Pods == nil || !immediate {
		_, gone, err := s.cfg.Store.DeletePod(ns, name, opts)
		if err != nil {
			writeError(w, s.cfg.Logger, err)
			return
		}
		if gone {
			writeDeleted(w, name, before.UID)
			return
		}
	}
	if s.cfg.Pods != nil {
		if err := s.cfg.Pods.DeletePod(r.Context(), ns, name, opts); err != nil {
			writeError(w, s.cfg.Logger, err)
			return
		}
	}
	if after, err := s.cfg.Store.Pods.Get(ns, name); err == nil {
		writeJSON(w, http.StatusOK, after)
		return
	}
	writeDeleted(w, name, before.UID)
}

func writeDeleted(w http.ResponseWriter, name string, uid types.UID) {
	writeJSON(w, http.StatusOK, metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details:  &metav1.StatusDetails{Name: name, Kind: resources.Pods.Plural, UID: uid},
	})
}

// deleteOptions reads metav1.DeleteOptions from the body (what client-go
// sends) and ?gracePeriodSeconds= (what curl users send; it wins).
func deleteOptions(r *http.Request) (metav1.DeleteOptions, error) {
	var opts metav1.DeleteOptions
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return opts, apierrors.NewBadRequest(fmt.Sprintf("reading DeleteOptions: %v", err))
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); len(body) > 0 && mt == runtime.ContentTypeProtobuf {
		if err := decodeProtobuf(body, &opts); err != nil {
			return opts, apierrors.NewBadRequest(fmt.Sprintf("DeleteOptions: %v", err))
		}
	} else if len(body) > 0 {
		if err := json.Unmarshal(body, &opts); err != nil {
			return opts, apierrors.NewBadRequest(fmt.Sprintf("DeleteOptions: %v", err))
		}
	}
	if s := r.URL.Query().Get("gracePeriodSeconds"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return opts, apierrors.NewBadRequest(fmt.Sprintf("gracePeriodSeconds %q: want an integer", s))
		}
		opts.GracePeriodSeconds = &n
	}
	if g := opts.GracePeriodSeconds; g != nil && *g < 0 {
		return opts, apierrors.NewBadRequest(fmt.Sprintf("gracePeriodSeconds: Invalid value: %d: must be greater than or equal to 0", *g))
	}
	return opts, nil
}

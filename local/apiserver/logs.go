package apiserver

import (
	"context"
	"io"
	"net/http"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podgate/podgate/local/apiserver/resources"
	"github.com/podgate/podgate/node/podlogs"
)

// LogSource serves container output: the node agent implements it.
//
// Logs returns the output of one container of the pod. It must honour
// opts.Container (empty: the pod's only container, else a 400 BadRequest
// naming the choices, as the API server does), opts.Previous (the last
// terminated instance) and opts.Follow (keep the reader open and deliver new
// output until the container stops or ctx is done; a Read must return once
// ctx is done). TailLines, SinceSeconds and Timestamps should be honoured;
// LimitBytes is enforced by the server. Return a StatusError to choose the
// HTTP status; any other error is a 500.
type LogSource interface {
	Logs(ctx context.Context, namespace, pod string, opts corev1.PodLogOptions) (io.ReadCloser, error)
}

// podLogs answers GET .../pods/{name}/log with text/plain, flushed as the
// container writes when following.
func (s *Server) podLogs(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	if s.cfg.Logs == nil {
		writeError(w, s.cfg.Logger, apierrors.NewMethodNotSupported(resources.Pods.GroupResource(), "get pods/log"))
		return
	}
	opts, err := podLogOptions(r.URL.Query())
	if err != nil {
		writeError(w, s.cfg.Logger, err)
		return
	}
	if _, err := s.cfg.Store.Pods.Get(ns, name); err != nil {
		writeError(w, s.cfg.Logger, err)
		return
	}
	rc, err := s.cfg.Logs.Logs(r.Context(), ns, name, opts)
	if err != nil {
		writeError(w, s.cfg.Logger, err)
		return
	}
	defer rc.Close()
	podlogs.Stream(w, rc, opts.LimitBytes)
}

// podLogOptions are the node's rules for the parameters: one parser for
// this API and the kubelet API of a node on a cluster.
func podLogOptions(q url.Values) (corev1.PodLogOptions, error) { return podlogs.ParseOptions(q) }

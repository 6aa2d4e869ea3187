package apiserver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podgate/podgate/local/apiserver/resources"
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
	var src io.Reader = rc
	if opts.LimitBytes != nil {
		src = io.LimitReader(rc, *opts.LimitBytes)
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	ctl := http.NewResponseController(w)
	if ctl.Flush() != nil {
		return
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if ctl.Flush() != nil {
				return
			}
		}
		if err != nil {
			// EOF is the end of the log; anything else cannot be reported
			// once the body has started, so the stream just ends.
			return
		}
	}
}

func podLogOptions(q url.Values) (corev1.PodLogOptions, error) {
	opts := corev1.PodLogOptions{Container: q.Get("container")}
	bools := []struct {
		name string
		into *bool
	}{{"follow", &opts.Follow}, {"previous", &opts.Previous}, {"timestamps", &opts.Timestamps}}
	for _, b := range bools {
		if s := q.Get(b.name); s != "" {
			v, err := strconv.ParseBool(s)
			if err != nil {
				return opts, apierrors.NewBadRequest(fmt.Sprintf("%s %q: want true or false", b.name, s))
			}
			*b.into = v
		}
	}
	ints := []struct {
		name string
		into **int64
		min  int64
	}{{"tailLines", &opts.TailLines, 0}, {"sinceSeconds", &opts.SinceSeconds, 1}, {"limitBytes", &opts.LimitBytes, 1}}
	for _, n := range ints {
		if s := q.Get(n.name); s != "" {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil || v < n.min {
				return opts, apierrors.NewBadRequest(fmt.Sprintf("%s %q: want an integer >= %d", n.name, s, n.min))
			}
			*n.into = &v
		}
	}
	return opts, nil
}

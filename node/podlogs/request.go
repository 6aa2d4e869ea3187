package podlogs

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ParseOptions reads a log request's query — the API server's pods/log
// parameters, which it passes on to the kubelet's /containerLogs under the
// same names: container, follow, previous, timestamps, tailLines,
// sinceSeconds, sinceTime (RFC 3339), limitBytes. A bad value is a 400
// naming the parameter.
func ParseOptions(q url.Values) (corev1.PodLogOptions, error) {
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
	if s := q.Get("sinceTime"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return opts, apierrors.NewBadRequest(fmt.Sprintf("sinceTime %q: want an RFC 3339 time", s))
		}
		mt := metav1.NewTime(t)
		opts.SinceTime = &mt
	}
	if opts.SinceSeconds != nil && opts.SinceTime != nil {
		return opts, apierrors.NewBadRequest("sinceSeconds and sinceTime: at most one may be set")
	}
	return opts, nil
}

// Stream answers a log request with rc as text/plain, at most limitBytes
// of it when set, flushed as it is read so that a follower sees each line
// when the container writes it. It returns when rc ends (EOF, or its
// context) or the client goes.
func Stream(w http.ResponseWriter, rc io.Reader, limitBytes *int64) {
	src := rc
	if limitBytes != nil {
		src = io.LimitReader(rc, *limitBytes)
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

package gatestatus

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// bookmarkEvery is how often a quiet watch that allows bookmarks gets
// one, so that the client's version moves on (the API server's is about
// a minute).
const bookmarkEvery = time.Minute

// watchQuery is what a watch asks: where to start, and how.
type watchQuery struct {
	rv uint64
	// initial: send the current state first (a watch from "" or "0",
	// or a watch-list request).
	initial bool
	// watchList: sendInitialEvents=true; the initial state ends with a
	// BOOKMARK annotated k8s.io/initial-events-end.
	watchList bool
	bookmarks bool
	timeout   time.Duration
}

func parseWatchQuery(r *http.Request) (watchQuery, error) {
	v := r.URL.Query()
	q := watchQuery{rv: rvOf(v.Get("resourceVersion")), bookmarks: v.Get("allowWatchBookmarks") == "true"}
	q.initial = v.Get("resourceVersion") == "" || v.Get("resourceVersion") == "0"
	if v.Get("sendInitialEvents") == "true" {
		if v.Get("resourceVersionMatch") != string(metav1.ResourceVersionMatchNotOlderThan) || !q.bookmarks {
			return q, apierrors.NewBadRequest("sendInitialEvents=true requires resourceVersionMatch=NotOlderThan and allowWatchBookmarks=true")
		}
		q.initial, q.watchList = true, true
	}
	if t := v.Get("timeoutSeconds"); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 {
			return q, apierrors.NewBadRequest(fmt.Sprintf("timeoutSeconds %q: not a number of seconds", t))
		}
		q.timeout = time.Duration(n) * time.Second
	}
	return q, nil
}

// watchEvent is metav1.WatchEvent's JSON with a typed object.
type watchEvent struct {
	Type   watch.EventType `json:"type"`
	Object any             `json:"object"`
}

// serveWatch streams the caller's pod from the node's informer. It sends
// the latest state each time the pod changed past what the client has
// seen: states in between may be skipped, never the last one, which is
// all a reflector keeps. Versions are the API server's, so a client that
// comes back with the version it had gets exactly what changed since.
// The watch ends with DELETED when the pod is deleted or replaced by a
// pod of the same name (another UID), after timeoutSeconds, or when the
// service stops.
func (s *Service) serveWatch(w http.ResponseWriter, r *http.Request, caller *corev1.Pod) {
	q, err := parseWatchQuery(r)
	if err != nil {
		s.metrics.requests.WithLabelValues(verbWatch, outcomeFailed).Inc()
		writeStatus(w, err)
		return
	}
	ctx := r.Context()
	if q.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, q.timeout)
		defer cancel()
	}
	s.metrics.requests.WithLabelValues(verbWatch, outcomeOK).Inc()
	s.metrics.watchesOpen.Inc()
	defer s.metrics.watchesOpen.Dec()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	st := &watchStream{w: w, rc: http.NewResponseController(w), enc: json.NewEncoder(w), q: q, last: q.rv, uid: caller.UID, pod: caller}
	if st.rc.Flush() != nil {
		return
	}
	tick := time.NewTicker(bookmarkEvery)
	defer tick.Stop()
	key := keyOf(caller.Namespace, caller.Name)
	for {
		state, seen, changed := s.pods.get(key)
		if !st.step(state, seen) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-tick.C:
			if q.bookmarks && !st.bookmark(seen, false) {
				return
			}
		}
	}
}

// watchStream is one watch's progress.
type watchStream struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	enc *json.Encoder
	q   watchQuery
	// last is the version the client has seen everything up to.
	last uint64
	uid  types.UID
	pod  *corev1.Pod // the last state sent (or the caller as identified)
	sent bool        // the initial state is sent
}

// step sends what changed; false when the watch is over.
func (st *watchStream) step(state *podState, seen uint64) bool {
	if state == nil || state.deleted || state.pod.UID != st.uid {
		last := st.pod
		if state != nil && state.deleted && state.pod.UID == st.uid {
			last = state.pod
		}
		st.send(watch.Deleted, last)
		return false
	}
	if !st.sent && st.q.initial {
		st.sent = true
		st.last, st.pod = state.rv, state.pod
		if !st.send(watch.Added, state.pod) {
			return false
		}
		if st.q.watchList {
			return st.bookmark(seen, true)
		}
		return true
	}
	st.sent = true
	if state.rv > st.last {
		st.last, st.pod = state.rv, state.pod
		return st.send(watch.Modified, state.pod)
	}
	return true
}

// bookmark tells the client it has seen everything up to seen.
func (st *watchStream) bookmark(seen uint64, initialEnd bool) bool {
	if seen < st.last {
		seen = st.last
	}
	st.last = seen
	p := &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{ResourceVersion: fmt.Sprint(seen)}}
	if initialEnd {
		p.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return st.send(watch.Bookmark, p)
}

func (st *watchStream) send(t watch.EventType, p *corev1.Pod) bool {
	obj := p.DeepCopy()
	obj.Kind, obj.APIVersion = "Pod", "v1"
	if st.enc.Encode(watchEvent{Type: t, Object: obj}) != nil {
		return false
	}
	return st.rc.Flush() == nil
}

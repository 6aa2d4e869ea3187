package activator

import (
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/podgate/podgate/record"
)

// requestIDs numbers the recorded requests of this process: unique
// across targets, so a recording's route facts name their request.
var requestIDs atomic.Uint64

// requestRecord is what the recording learns of one request; nil when no
// recording was asked for, and every method is then a no-op: a request
// costs nothing more (no clock reading, no allocation).
type requestRecord struct {
	t      *Target
	id     uint64
	method string
	path   string
	start  time.Time
	heldAt time.Time // zero while not held
	pod    string    // the backend of the last attempt
	err    string
}

// newRecord starts the record of r, or returns nil without a recorder.
func (t *Target) newRecord(r *http.Request) *requestRecord {
	if t.cfg.Recorder == nil {
		return nil
	}
	return &requestRecord{t: t, id: requestIDs.Add(1), method: r.Method, path: r.URL.Path, start: t.cfg.Clock.Now()}
}

// namespace is the namespace of a target named NAMESPACE/NAME (podgate
// run's front door and the cluster activator name theirs so), else "".
func (t *Target) namespace() string {
	ns, _, ok := strings.Cut(t.name, "/")
	if !ok {
		return ""
	}
	return ns
}

// route records one decision at now.
func (rr *requestRecord) route(now time.Time, decision, pod string, held time.Duration) {
	rr.t.cfg.Recorder.Record(record.Fact{
		Time: now, Kind: record.KindRoute, Namespace: rr.t.namespace(), Pod: pod,
		Route: &record.Route{Target: rr.t.name, Decision: decision, Request: rr.id, Held: held},
	})
}

// routed: b was given to the request, at once or after a hold.
func (rr *requestRecord) routed(b *backend) {
	if rr == nil {
		return
	}
	rr.pod = b.name
	now := rr.t.cfg.Clock.Now()
	if rr.heldAt.IsZero() {
		rr.route(now, record.DecisionRouted, b.name, 0)
		return
	}
	rr.route(now, record.DecisionReleased, b.name, now.Sub(rr.heldAt))
	rr.heldAt = time.Time{}
}

// held: no backend was free; the request waits in the queue.
func (rr *requestRecord) held() {
	if rr == nil {
		return
	}
	rr.heldAt = rr.t.cfg.Clock.Now()
	rr.route(rr.heldAt, record.DecisionHeld, "", 0)
}

// gaveUp: the request got no backend (acquire failed) and ends here,
// answered by no pod. Of the reasons only the request timeout of a held
// request is a routing decision: a client gone, a full queue or a closed
// target show in the request's status and error.
func (rr *requestRecord) gaveUp(err error) {
	if rr == nil {
		return
	}
	rr.pod = ""
	if !rr.heldAt.IsZero() && err == errTimeout {
		now := rr.t.cfg.Clock.Now()
		rr.route(now, record.DecisionTimedOut, "", now.Sub(rr.heldAt))
	}
	rr.heldAt = time.Time{}
}

// fail keeps why the request got no answer from a pod.
func (rr *requestRecord) fail(err error) {
	if rr == nil {
		return
	}
	rr.err = err.Error()
}

// done records the request's end with the status the client got.
func (rr *requestRecord) done(code int) {
	if rr == nil {
		return
	}
	latency := rr.t.cfg.Clock.Since(rr.start)
	// The end as start + latency, so that the two agree on the wall clock
	// too (the latency is measured on the monotonic one).
	end := rr.start.Add(latency)
	rr.t.cfg.Recorder.Record(record.Fact{
		Time: end, Kind: record.KindRequest, Namespace: rr.t.namespace(), Pod: rr.pod,
		Request: &record.Request{
			ID: rr.id, Target: rr.t.name, Method: rr.method, Path: rr.path,
			Start: rr.start, Status: code, Latency: latency, Error: rr.err,
		},
	})
}

// noteRoutableLocked records when b starts or stops being a backend the
// balancer may pick: the front door's own word on when it learnt of a
// pod's readiness, which the recording's watch of the API only
// approximates (on a loaded machine by tens of milliseconds, either way).
func (t *Target) noteRoutableLocked(b *backend, routable bool) {
	if b.routable == routable {
		return
	}
	b.routable = routable
	if t.cfg.Recorder == nil {
		return
	}
	decision := record.DecisionPodOut
	if routable {
		decision = record.DecisionPodIn
	}
	t.cfg.Recorder.Record(record.Fact{
		Time: t.cfg.Clock.Now(), Kind: record.KindRoute, Namespace: t.namespace(), Pod: b.name,
		Route: &record.Route{Target: t.name, Decision: decision},
	})
}

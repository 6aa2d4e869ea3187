package activator

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
)

// The phases of a request with respect to its timeout: it may time out
// until the response starts, and exactly one of the two transitions wins.
const (
	phaseWaiting int32 = iota
	phaseResponding
	phaseTimedOut
)

// requestState travels in the request's context to the proxy's hooks.
type requestState struct {
	phase      atomic.Int32
	body       *trackedBody
	retry      bool // set by the error hook of the attempt that just ran
	clientGone bool
	rec        *requestRecord // nil unless Config.Recorder
}

type stateKey struct{}

func stateOf(ctx context.Context) *requestState {
	rs, _ := ctx.Value(stateKey{}).(*requestState)
	return rs
}

// ServeHTTP holds the request until a backend is free, proxies it, and
// sends it elsewhere if the chosen gate refused the connection. A request
// is only ever retried when its dial failed: no byte of it left.
func (t *Target) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rs := &requestState{rec: t.newRecord(r)}
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	timer := t.cfg.Clock.AfterFunc(t.cfg.RequestTimeout, func() {
		if rs.phase.CompareAndSwap(phaseWaiting, phaseTimedOut) {
			cancel(errTimeout)
		}
	})
	defer timer.Stop()

	r = r.WithContext(context.WithValue(ctx, stateKey{}, rs)) // a copy: the caller's request is left alone
	if r.Body != nil && r.Body != http.NoBody {
		rs.body = &trackedBody{ReadCloser: r.Body}
		r.Body = rs.body
	}
	sw := &statusWriter{ResponseWriter: w}
	// Deferred: ReverseProxy panics with http.ErrAbortHandler when a
	// response breaks mid-body, and the request still counts.
	defer func() {
		code := sw.code
		if rs.clientGone && code == 0 {
			code = 499 // nginx's "client closed request": nothing was sent
		}
		t.cfg.Metrics.Request(t.name, code)
		rs.rec.done(code)
	}()

	ahead := false
	for {
		b, err := t.acquire(ctx, ahead, rs.rec)
		if err != nil {
			rs.rec.gaveUp(err)
			t.refuse(sw, rs, err)
			return
		}
		if !t.attempt(b, sw, r, rs) {
			return
		}
		ahead = true
	}
}

// attempt proxies the request to b and says whether it should go to
// another backend (the dial failed). The slot is freed even if the proxy
// panics.
func (t *Target) attempt(b *backend, w http.ResponseWriter, r *http.Request, rs *requestState) (retry bool) {
	defer t.release(b)
	rs.retry = false
	b.proxy.ServeHTTP(w, r)
	return rs.retry
}

// refuse answers a request that got no backend.
func (t *Target) refuse(w http.ResponseWriter, rs *requestState, err error) {
	switch {
	case errors.Is(err, errTimeout):
		writeTimeout(w)
	case errors.Is(err, errQueueFull):
		t.cfg.Logger.Warn("request refused: queue full", "target", t.name)
		http.Error(w, errQueueFull.Error(), http.StatusServiceUnavailable)
	case errors.Is(err, errClosed):
		http.Error(w, errClosed.Error(), http.StatusServiceUnavailable)
	case errors.As(err, new(*UnroutableError)):
		http.Error(w, "activator: "+err.Error(), http.StatusServiceUnavailable)
	default: // the client's context ended
		rs.clientGone = true
	}
	rs.rec.fail(err)
}

// writeTimeout is Knative's activator answer, body without newline.
func writeTimeout(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusGatewayTimeout)
	_, _ = io.WriteString(w, errTimeout.Error())
}

// trackedBody tells whether any byte of the request body was read (and so
// possibly sent). Close is left to the server: the transport closes the
// body of a failed attempt, and the next attempt still needs it.
type trackedBody struct {
	io.ReadCloser
	read atomic.Bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	b.read.Store(true)
	return b.ReadCloser.Read(p)
}

func (b *trackedBody) Close() error { return nil }

func (b *trackedBody) started() bool { return b != nil && b.read.Load() }

// statusWriter records the status code sent; Unwrap lets
// http.ResponseController (used by ReverseProxy) reach Flush and Hijack.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

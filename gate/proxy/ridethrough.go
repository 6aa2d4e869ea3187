package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/utils/clock"
)

// Backoff of a held request between connection attempts; the serving
// container's fast probe also wakes held requests the moment it passes.
const (
	holdMinBackoff = time.Millisecond
	holdMaxBackoff = 20 * time.Millisecond
)

// rideThrough is the RoundTripper to the serving container. A connection
// the container refuses means the request never reached it (the container
// is restarting): the request is held and sent again, with backoff, until
// the container accepts or the request's context ends (its timeout).
// Another error comes after the request may have reached the container: an
// idempotent request whose HTTP/1.1 connection failed before a byte of the
// answer arrived (the container died with it) is sent again once, and held
// like a refused one while the container restarts; any other is returned
// as is, never sent twice by the gate.
//
// Go's transport itself resends a request on a fresh connection when a
// kept-alive connection died before any byte of it was written (the
// request's GetBody lets it do that for requests with a body too) and, as
// RFC 9110 §9.2.2 allows, an idempotent request without body (GET, HEAD,
// OPTIONS, TRACE, or one carrying an Idempotency-Key header) whose
// kept-alive connection closed before the response began.
type rideThrough struct {
	next  http.RoundTripper
	clock clock.Clock
	// refused is told about each refused connection; it marks the
	// container down.
	refused func(err error)
	// back returns a channel closed when the container is seen back.
	back func() <-chan struct{}
	m    Observer
	// closeIdle drops the idle connections to the container.
	closeIdle func()
}

func (rt *rideThrough) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.next.RoundTrip(req)
	if err == nil {
		return resp, nil
	}
	resends := 0
	if !neverSent(err) {
		if !rt.mayResend(req, err, &resends) {
			return nil, err
		}
		// The container died with the request and before a byte of its
		// answer: send it again at once. A refused connection then means
		// it is restarting, and the request is held. The idle connections
		// lead to the process that died: the resend must not take one.
		rt.closeIdle()
		resp, err = rt.again(req, err)
		if err != nil && dyingListener(req, err) {
			// The resend was dialled while the killed container's
			// listening socket was still open: the kernel accepted the
			// connection into its backlog and reset it when the socket
			// closed with the process. That is the same death, not a
			// second one; the next attempt finds the port closed and
			// the request is held.
			resp, err = rt.again(req, err)
		}
		if err == nil || !(neverSent(err) || rt.mayResend(req, err, &resends)) {
			return resp, err
		}
	}
	return rt.hold(req, err, resends)
}

// maxResends is how often a request that died in the container unanswered
// is sent again: once. A request that kills the container each time
// (Go's transport stops after a fresh connection fails for the same
// reason) gets its 502 after the second death, not a crash loop.
const maxResends = 1

// mayResend reports whether a request may be sent again after err, which
// came after it may have reached the container: it is idempotent by the
// rule Go's transport retries by (GET, HEAD, OPTIONS, TRACE, or an
// Idempotency-Key or X-Idempotency-Key header; a body only when it can be
// replayed), its connection failed before a byte of the answer arrived,
// and it was not sent again already.
func (rt *rideThrough) mayResend(req *http.Request, err error, resends *int) bool {
	if *resends >= maxResends || req.Context().Err() != nil || !idempotent(req) || !unanswered(err) {
		return false
	}
	*resends++
	return true
}

// idempotent is net/http's Request.isReplayable: the requests its
// transport sends again by itself after a kept-alive connection failed
// before the answer.
func idempotent(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, key := req.Header["Idempotency-Key"]
	_, xkey := req.Header["X-Idempotency-Key"]
	return key || xkey
}

// again rewinds the request's body, if it was read, and sends it again.
func (rt *rideThrough) again(req *http.Request, err error) (*http.Response, error) {
	if rb, ok := req.Body.(*replayBody); ok && rb.touched() {
		if _, rerr := rb.rewind(); rerr != nil {
			return nil, fmt.Errorf("%w: %w", rerr, err)
		}
	}
	rt.m.Retried()
	return rt.next.RoundTrip(req)
}

func (rt *rideThrough) hold(req *http.Request, err error, resends int) (*http.Response, error) {
	ctx := req.Context()
	rt.m.HoldStarted()
	defer rt.m.HoldEnded()
	backoff := holdMinBackoff
	for {
		if neverSent(err) {
			rt.refused(err)
		}
		back := rt.back()
		t := rt.clock.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("held while the serving container refused connections (%v): %w", err, context.Cause(ctx))
		case <-t.C():
		case <-back:
			t.Stop()
		}
		var resp *http.Response
		resp, err = rt.again(req, err)
		if err == nil || !(neverSent(err) || rt.mayResend(req, err, &resends)) {
			return resp, err
		}
		backoff = min(2*backoff, holdMaxBackoff)
	}
}

// unanswered reports whether err is the failure of a connection to the
// container on which not a byte arrived since the gate last wrote to it:
// the request's answer had not begun (see upstreamConn).
func unanswered(err error) bool {
	var u *unansweredError
	return errors.As(err, &u)
}

// unansweredError marks a read or write error of a connection to the
// container that came before a byte of the answer.
type unansweredError struct{ err error }

func (e *unansweredError) Error() string { return e.err.Error() }
func (e *unansweredError) Unwrap() error { return e.err }

// upstreamConn is an HTTP/1.1 connection to the serving container that
// marks its errors when nothing arrived since the last write: on such a
// connection the transport writes a request and then reads its answer
// (one request at a time), so a failure with nothing read since is one
// before the answer's first byte. (A request body still streaming while
// a partial answer arrived would count as unanswered too; Go's transport
// returns the answer once its headers are whole, so only a header cut
// short could be, and the request is idempotent anyway.)
type upstreamConn struct {
	net.Conn
	read atomic.Int64 // bytes read since the last write
}

func (c *upstreamConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.read.Add(int64(n))
	} else if err != nil && c.read.Load() == 0 {
		err = &unansweredError{err}
	}
	return n, err
}

func (c *upstreamConn) Write(p []byte) (int, error) {
	c.read.Store(0)
	n, err := c.Conn.Write(p)
	if err != nil && c.read.Load() == 0 {
		err = &unansweredError{err}
	}
	return n, err
}

// dyingListener reports whether err, the failure of a resend right after
// the container died, is a reset with not a byte of the answer read: what
// a connection gets that was accepted by the kernel into the backlog of a
// listening socket that then closed. A live container that reads a
// request and closes its connection sends a FIN (EOF), not a reset, so a
// request that kills the container each time is still sent only twice,
// and one that makes it reset its connections at most three times.
func dyingListener(req *http.Request, err error) bool {
	return req.Context().Err() == nil && unanswered(err) && errors.Is(err, syscall.ECONNRESET)
}

// neverSent reports whether err proves the request never left the gate:
// the connection could not be opened (refused, reset during the handshake,
// no route), so not a byte of it was written.
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
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
// the container accepts or the request's context ends (its timeout). Any
// other error comes after the request may have reached the container and
// is returned as is: such a request is never sent twice by the gate.
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
}

func (rt *rideThrough) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.next.RoundTrip(req)
	if err == nil || !neverSent(err) {
		return resp, err
	}
	return rt.hold(req, err)
}

func (rt *rideThrough) hold(req *http.Request, err error) (*http.Response, error) {
	ctx := req.Context()
	rt.m.HoldStarted()
	defer rt.m.HoldEnded()
	backoff := holdMinBackoff
	for {
		rt.refused(err)
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
		if rb, ok := req.Body.(*replayBody); ok && rb.touched() {
			if _, rerr := rb.rewind(); rerr != nil {
				return nil, fmt.Errorf("%w: %w", rerr, err)
			}
		}
		rt.m.Retried()
		var resp *http.Response
		resp, err = rt.next.RoundTrip(req)
		if err == nil || !neverSent(err) {
			return resp, err
		}
		backoff = min(2*backoff, holdMaxBackoff)
	}
}

// neverSent reports whether err proves the request never left the gate:
// the connection could not be opened (refused, reset during the handshake,
// no route), so not a byte of it was written.
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

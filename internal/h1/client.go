// Package h1 is the proxies' fast HTTP/1.1 client to one address: the
// gate's to its serving container, the front door's to each gate. It
// sends an idempotent request without a body (a GET) on a kept-alive
// connection in the calling goroutine, and leaves every other request to
// a fallback http.RoundTripper (an http.Transport).
package h1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"sync"
	"time"
)

// Client sends the most common request a proxy forwards, an idempotent
// one without a body (a GET), on a kept-alive HTTP/1.1 connection to Addr,
// in the calling goroutine: write the request, read the answer's headers,
// hand the body over, and put the connection back when the body has been
// read to its end. net/http's Transport, which sends every other request
// (a body, an upgrade), spends two goroutines per connection and hands
// each request and answer between them over channels; for a small
// request those handovers, their contexts and their allocations cost a
// proxy more CPU than its own work. Requests and answers are written and
// read as net/http writes and reads them (Request.Write's bytes, pinned
// by a test; ReadResponse).
//
// It keeps the Transport's rules where they show: an idempotent request
// whose kept-alive connection turns out dead before a byte of the answer
// (the server closed it while idle, or died) is sent again on another
// connection; 1xx answers go to Informational or the request's httptrace
// Got1xxResponse; the request's context ending aborts it at once, with
// the context's cause as the error. Errors of Dial are returned as they
// are, so a caller can tell a request that never left (a failed dial).
//
// Set the exported fields before the first request; a Client is safe for
// concurrent use.
type Client struct {
	// Dial opens a connection to Addr.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Addr is the server's HOST:PORT: every request goes there, whatever
	// its URL says.
	Addr string
	// Fallback sends the requests FastPath refuses.
	Fallback http.RoundTripper
	// IdleTimeout closes a connection idle for that long (within half of
	// it after).
	IdleTimeout time.Duration
	// MaxIdle is how many idle connections are kept; more are closed.
	MaxIdle int
	// Informational, when set, is offered every 1xx answer before the
	// final one and reports whether it took it; one it does not take goes
	// to the request's httptrace Got1xxResponse, if any.
	Informational func(req *http.Request, code int, header http.Header) bool

	mu     sync.Mutex
	idle   []*conn // most recently used last
	pruner *time.Timer
	closed bool
}

// conn is one kept-alive connection.
type conn struct {
	conn   net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	idleAt time.Time
	used   bool // has carried a request
}

func (c *conn) close() { _ = c.conn.Close() }

// FastPath reports whether req is one Client sends itself: no body, no
// upgrade, no trailer, not to be closed, idempotent.
func FastPath(req *http.Request) bool {
	return (req.Body == nil || req.Body == http.NoBody) && !req.Close &&
		len(req.Header["Upgrade"]) == 0 && len(req.Trailer) == 0 && idempotent(req)
}

// idempotent is net/http's Request.isReplayable for a request without a
// body: the requests its Transport sends again by itself after a
// kept-alive connection failed before the answer.
func idempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, key := req.Header["Idempotency-Key"]
	_, xkey := req.Header["X-Idempotency-Key"]
	return key || xkey
}

// RoundTrip sends req itself if FastPath(req), else through Fallback.
func (h *Client) RoundTrip(req *http.Request) (*http.Response, error) {
	if !FastPath(req) {
		return h.Fallback.RoundTrip(req)
	}
	ctx := req.Context()
	for {
		c, err := h.get(ctx)
		if err != nil {
			return nil, err
		}
		resp, unanswered, err := h.roundTrip(ctx, c, req)
		if err == nil {
			return resp, nil
		}
		// A kept-alive connection that failed before a byte of the
		// answer was dead already: another one, or a fresh one, may do
		// (the Transport retries so too). A fresh connection's failure
		// is the answer.
		if !c.used || !unanswered || ctx.Err() != nil {
			return nil, err
		}
	}
}

// roundTrip sends req on c and reads the answer's headers; unanswered
// reports an error that came before a byte of the answer. On an error c
// is closed.
func (h *Client) roundTrip(ctx context.Context, c *conn, req *http.Request) (resp *http.Response, unanswered bool, err error) {
	// The request's end (its time limit, its client gone) aborts the
	// connection's reads and writes.
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(aLongTimeAgo) })
	fail := func(err error, unanswered bool) (*http.Response, bool, error) {
		stop()
		c.close()
		if cause := context.Cause(ctx); cause != nil {
			return nil, unanswered, cause
		}
		return nil, unanswered, err
	}
	if err := writeRequest(c.bw, req); err != nil {
		return fail(err, true)
	}
	if err := c.bw.Flush(); err != nil {
		return fail(err, true)
	}
	// The answer's first byte, or the proof that none came.
	if _, err := c.br.Peek(1); err != nil {
		return fail(err, true)
	}
	resp, err = h.readResponse(c.br, req)
	if err != nil {
		return fail(err, false)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return fail(errors.New("the server switched protocols on a request that asked for no upgrade"), false)
	}
	if resp.Body == http.NoBody {
		h.done(c, stop, !resp.Close)
		return resp, false, nil
	}
	resp.Body = &body{body: resp.Body, ctx: ctx, c: c, h: h, stop: stop, reuse: !resp.Close}
	return resp, false, nil
}

// maxInformational bounds the 1xx answers before the final one.
const maxInformational = 5

// readResponse reads the final answer to req, passing 1xx answers on to
// Informational or to the request's Got1xxResponse hook as the Transport
// does.
func (h *Client) readResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	for n := 0; ; n++ {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, err
		}
		code := resp.StatusCode
		if code < 100 || code > 199 || code == http.StatusSwitchingProtocols {
			return resp, nil
		}
		if n == maxInformational {
			return nil, errors.New("too many 1xx informational responses")
		}
		if h.Informational != nil && h.Informational(req, code, resp.Header) {
			continue
		}
		if trace := httptrace.ContextClientTrace(req.Context()); trace != nil && trace.Got1xxResponse != nil {
			if err := trace.Got1xxResponse(code, textproto.MIMEHeader(resp.Header)); err != nil {
				return nil, err
			}
		}
	}
}

// aLongTimeAgo is a deadline that has passed: it aborts blocked I/O.
var aLongTimeAgo = time.Unix(1, 0)

// done ends c's request: back to the pool when its answer was read to its
// end, no limit aborted it, and it may be kept alive.
func (h *Client) done(c *conn, stop func() bool, reuse bool) {
	if !stop() || !reuse {
		c.close()
		return
	}
	h.put(c)
}

// get takes the most recently used idle connection, or dials one. It
// does not look at the clock: prune closes the connections idle too long
// (within half the idle timeout after), and one the server closed
// meanwhile is replaced (see RoundTrip).
func (h *Client) get(ctx context.Context) (*conn, error) {
	h.mu.Lock()
	if n := len(h.idle); n > 0 {
		c := h.idle[n-1]
		h.idle[n-1] = nil
		h.idle = h.idle[:n-1]
		h.mu.Unlock()
		return c, nil
	}
	h.mu.Unlock()
	nc, err := h.Dial(ctx, "tcp", h.Addr)
	if err != nil {
		return nil, err
	}
	return &conn{conn: nc, br: bufio.NewReader(nc), bw: bufio.NewWriter(nc)}, nil
}

func (h *Client) put(c *conn) {
	c.used = true
	c.idleAt = time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || len(h.idle) >= h.MaxIdle {
		c.close()
		return
	}
	h.idle = append(h.idle, c)
	if h.pruner == nil {
		h.pruner = time.AfterFunc(h.IdleTimeout, h.prune)
	}
}

// prune closes the connections idle for the idle timeout, and looks again
// later while any are left.
func (h *Client) prune() {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.idle {
		if now.Sub(c.idleAt) >= h.IdleTimeout {
			c.close()
			continue
		}
		h.idle[n] = c
		n++
	}
	clear(h.idle[n:])
	h.idle = h.idle[:n]
	h.pruner = nil
	if n > 0 && !h.closed {
		h.pruner = time.AfterFunc(h.IdleTimeout/2, h.prune)
	}
}

// CloseIdleConnections closes the idle connections Client keeps itself
// (not Fallback's: a Fallback shared by many Clients is the caller's to
// close). Later requests open new ones.
func (h *Client) CloseIdleConnections() { h.closeIdle(false) }

// Close closes the idle connections now and every connection in use when
// its request ends: the server is gone for good. A request sent after
// Close still works, on a connection of its own.
func (h *Client) Close() { h.closeIdle(true) }

func (h *Client) closeIdle(forGood bool) {
	h.mu.Lock()
	idle := h.idle
	h.idle = nil
	if h.pruner != nil {
		h.pruner.Stop()
		h.pruner = nil
	}
	if forGood {
		h.closed = true
	}
	h.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
}

// body is an answer's body on the fast path: read to its end, it puts
// the connection back; closed before, it closes the connection (net/http
// would read the rest of a client response's body on Close, however long
// it streams).
type body struct {
	body  io.ReadCloser
	ctx   context.Context
	c     *conn
	h     *Client
	stop  func() bool
	reuse bool
	ended bool
}

func (b *body) Read(p []byte) (int, error) {
	if b.ended {
		return 0, io.EOF
	}
	n, err := b.body.Read(p)
	if err == io.EOF {
		b.ended = true
		b.h.done(b.c, b.stop, b.reuse)
	} else if err != nil {
		b.ended = true
		b.h.done(b.c, b.stop, false)
		if cause := context.Cause(b.ctx); cause != nil {
			err = cause // the request's end aborted the read
		}
	}
	return n, err
}

func (b *body) Close() error {
	if !b.ended {
		b.ended = true
		b.h.done(b.c, b.stop, false)
	}
	return nil
}

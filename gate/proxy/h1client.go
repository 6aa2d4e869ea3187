package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync"
	"time"
)

// h1Client sends the most common request to the serving container, an
// idempotent one without a body (a GET), on a kept-alive HTTP/1.1
// connection, in the calling goroutine: write the request, read the
// answer's headers, hand the body over, and put the connection back when
// the body has been read to its end. net/http's Transport, which sends
// every other request (a body, an upgrade), spends two goroutines per
// connection and hands each request and answer between them over
// channels; for a small request those handovers, their contexts and
// their allocations cost the gate more CPU than its own work. Requests
// and answers are written and read by net/http itself (Request.Write,
// ReadResponse), so they are byte for byte what the Transport sends and
// reads.
//
// It keeps the Transport's rules where they show: an idempotent request
// whose kept-alive connection turns out dead before a byte of the answer
// (the container closed it while idle, or died) is sent again on another
// connection; 1xx answers go to the request's httptrace
// Got1xxResponse; the request's context ending aborts it at once.
type h1Client struct {
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	addr     string
	fallback http.RoundTripper
	// idleTimeout closes a connection idle for that long.
	idleTimeout time.Duration
	maxIdle     int

	mu     sync.Mutex
	idle   []*h1Conn // most recently used last
	pruner *time.Timer
}

// h1Conn is one kept-alive connection to the serving container.
type h1Conn struct {
	conn   net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	idleAt time.Time
	used   bool // has carried a request
}

func (c *h1Conn) close() { _ = c.conn.Close() }

// fastPath reports whether req is one h1Client sends itself.
func fastPath(req *http.Request) bool {
	return (req.Body == nil || req.Body == http.NoBody) && !req.Close &&
		len(req.Header["Upgrade"]) == 0 && len(req.Trailer) == 0 && idempotent(req)
}

func (h *h1Client) RoundTrip(req *http.Request) (*http.Response, error) {
	if !fastPath(req) {
		return h.fallback.RoundTrip(req)
	}
	ctx := req.Context()
	for {
		c, err := h.get(ctx)
		if err != nil {
			return nil, err
		}
		resp, err := h.roundTrip(ctx, c, req)
		if err == nil {
			return resp, nil
		}
		// A kept-alive connection that failed before a byte of the
		// answer (unansweredError) was dead already: another one, or a
		// fresh one, may do (the Transport retries so too).
		if !c.used || ctx.Err() != nil || !unanswered(err) {
			return nil, err
		}
	}
}

// roundTrip sends req on c and reads the answer's headers. On an error c
// is closed.
func (h *h1Client) roundTrip(ctx context.Context, c *h1Conn, req *http.Request) (*http.Response, error) {
	// The request's end (its time limit, its client gone) aborts the
	// connection's reads and writes.
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(aLongTimeAgo) })
	fail := func(err error) (*http.Response, error) {
		stop()
		c.close()
		if cause := context.Cause(ctx); cause != nil {
			return nil, cause
		}
		return nil, err
	}
	if err := writeRequest(c.bw, req); err != nil {
		return fail(err)
	}
	if err := c.bw.Flush(); err != nil {
		return fail(err)
	}
	resp, err := readResponse(c.br, req)
	if err != nil {
		return fail(err)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return fail(errors.New("the serving container switched protocols on a request that asked for no upgrade"))
	}
	if resp.Body == http.NoBody {
		h.done(c, stop, !resp.Close)
		return resp, nil
	}
	resp.Body = &h1Body{body: resp.Body, ctx: ctx, c: c, h: h, stop: stop, reuse: !resp.Close}
	return resp, nil
}

// reqWriteExclude are the headers Request.Write writes apart from the
// rest, or not at all.
var reqWriteExclude = map[string]bool{"Host": true, "User-Agent": true, "Content-Length": true, "Transfer-Encoding": true, "Trailer": true}

// writeRequest writes a bodiless request as Request.Write does, without
// its formatting and per-request allocations: the request line, Host,
// User-Agent, Content-Length: 0 for POST, PUT and PATCH, the other
// headers sorted. A host or URI that needs Request.Write's
// rules (Punycode, a zone, control characters) goes to Request.Write.
func writeRequest(bw *bufio.Writer, req *http.Request) error {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	ruri := req.URL.RequestURI()
	if !plainHost(host) || !plainURI(ruri) || req.Method == "" {
		return req.Write(bw)
	}
	bw.WriteString(req.Method)
	bw.WriteByte(' ')
	bw.WriteString(ruri)
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(host)
	bw.WriteString("\r\n")
	ua := "Go-http-client/1.1" // net/http's default, unless the header is there
	if _, ok := req.Header["User-Agent"]; ok {
		ua = textproto.TrimString(uaNewlines.Replace(req.Header.Get("User-Agent")))
	}
	if ua != "" {
		bw.WriteString("User-Agent: ")
		bw.WriteString(ua)
		bw.WriteString("\r\n")
	}
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		bw.WriteString("Content-Length: 0\r\n") // "many servers expect" one, says net/http
	}
	if err := req.Header.WriteSubset(bw, reqWriteExclude); err != nil {
		return err
	}
	_, err := bw.WriteString("\r\n")
	return err
}

var uaNewlines = strings.NewReplacer("\n", " ", "\r", " ")

// plainHost: only letters, digits and . - _ : [ ] (a name, an IPv4 or a
// bracketed IPv6 address without zone, a port), which Request.Write sends
// unchanged.
func plainHost(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_' || c == ':' || c == '[' || c == ']') {
			return false
		}
	}
	return true
}

// plainURI: no control characters or spaces and no bytes beyond ASCII.
func plainURI(u string) bool {
	for i := 0; i < len(u); i++ {
		if u[i] <= ' ' || u[i] >= 0x7f {
			return false
		}
	}
	return true
}

// maxInformational bounds the 1xx answers before the final one.
const maxInformational = 5

// readResponse reads the final answer to req, passing 1xx answers on to
// the client (serveDirect's request) or to the request's Got1xxResponse
// hook as the Transport does.
func readResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	trace := httptrace.ContextClientTrace(req.Context())
	var inform *Recorder
	if st, _ := req.Context().Value(stateKey{}).(*reqState); st != nil {
		inform = st.inform
	}
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
		if inform != nil {
			// As ReverseProxy's trace passes it on: its headers, then
			// none left for the final answer.
			h := inform.Header()
			for k, vv := range resp.Header {
				h[k] = append(h[k], vv...)
			}
			inform.WriteHeader(code)
			clear(h)
		} else if trace != nil && trace.Got1xxResponse != nil {
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
func (h *h1Client) done(c *h1Conn, stop func() bool, reuse bool) {
	if !stop() || !reuse {
		c.close()
		return
	}
	h.put(c)
}

// get takes the most recently used idle connection, or dials one. It
// does not look at the clock: prune closes the connections idle too long
// (within half the idle timeout after), and one the container closed
// meanwhile is replaced (see RoundTrip).
func (h *h1Client) get(ctx context.Context) (*h1Conn, error) {
	h.mu.Lock()
	if n := len(h.idle); n > 0 {
		c := h.idle[n-1]
		h.idle[n-1] = nil
		h.idle = h.idle[:n-1]
		h.mu.Unlock()
		return c, nil
	}
	h.mu.Unlock()
	conn, err := h.dial(ctx, "tcp", h.addr)
	if err != nil {
		return nil, err
	}
	return &h1Conn{conn: conn, br: bufio.NewReader(conn), bw: bufio.NewWriter(conn)}, nil
}

func (h *h1Client) put(c *h1Conn) {
	c.used = true
	c.idleAt = time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.idle) >= h.maxIdle {
		c.close()
		return
	}
	h.idle = append(h.idle, c)
	if h.pruner == nil {
		h.pruner = time.AfterFunc(h.idleTimeout, h.prune)
	}
}

// prune closes the connections idle for the idle timeout, and looks again
// later while any are left.
func (h *h1Client) prune() {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.idle {
		if now.Sub(c.idleAt) >= h.idleTimeout {
			c.close()
			continue
		}
		h.idle[n] = c
		n++
	}
	clear(h.idle[n:])
	h.idle = h.idle[:n]
	h.pruner = nil
	if n > 0 {
		h.pruner = time.AfterFunc(h.idleTimeout/2, h.prune)
	}
}

// CloseIdleConnections closes the idle connections, the fast path's and
// the fallback's.
func (h *h1Client) CloseIdleConnections() {
	h.mu.Lock()
	idle := h.idle
	h.idle = nil
	if h.pruner != nil {
		h.pruner.Stop()
		h.pruner = nil
	}
	h.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
	if ci, ok := h.fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// h1Body is an answer's body on the fast path: read to its end, it puts
// the connection back; closed before, it closes the connection (net/http
// would read the rest of a client response's body on Close, however long
// it streams).
type h1Body struct {
	body  io.ReadCloser
	ctx   context.Context
	c     *h1Conn
	h     *h1Client
	stop  func() bool
	reuse bool
	ended bool
}

func (b *h1Body) Read(p []byte) (int, error) {
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

func (b *h1Body) Close() error {
	if !b.ended {
		b.ended = true
		b.h.done(b.c, b.stop, false)
	}
	return nil
}

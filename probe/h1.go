package probe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"
)

// plainHTTP is the RoundTripper of one plain-HTTP probe attempt. It makes
// the exchange in the calling goroutine: dial with the probe's dialer,
// write the request, read the answer's headers, hand over a body that
// closes the connection. net/http's Transport, even with keep-alives
// off, spends three goroutines on every connection (dial, read loop,
// write loop), grows their stacks and hands the request and the answer
// between them over channels, waking a second thread to do so: about a
// third of what a probe costs above the kernel's fresh-connection floor
// (docs/benchmarks.md, "Node agent: 100 probes/s").
//
// What goes on the wire and what comes back are the Transport's: the
// request is written as Request.Write writes it with the Transport's
// "Connection: close" after it, the answer is read by http.ReadResponse,
// and every error is the text the Transport gives in the same place
// (dial, write, first byte, headers, body). A request this type does not
// write itself (another scheme after a redirect, a header the Transport
// would refuse or rewrite, a user Connection or Upgrade header, a host
// that needs Punycode) goes to the Transport before a byte is sent.
//
// The http.Client on top has no Timeout: with a RoundTripper it does
// not know, the Client would spend a goroutine and a timer per request
// to enforce it. The attempt's context carries the deadline instead,
// and plainHTTP adds the Client's own words to errors past it, so that
// messages stay the Client's (see timedOut).
type plainHTTP struct {
	dialer    *net.Dialer
	transport *http.Transport
	// deadline is the attempt's own (Client.Timeout's); ownDeadline is
	// false when the caller's context ends first, in which case the
	// Client would not have set one.
	deadline    time.Time
	ownDeadline bool
}

// The Client's words for an error past its Timeout, before and after the
// answer's headers.
const (
	timeoutAwaitingHeaders = " (Client.Timeout exceeded while awaiting headers)"
	timeoutReadingBody     = " (Client.Timeout or context cancellation while reading body)"
)

// clientTimeoutError is net/http's timeoutError: the text, a net.Error
// that timed out, and errors.Is(err, context.DeadlineExceeded).
type clientTimeoutError struct{ msg string }

func (e *clientTimeoutError) Error() string     { return e.msg }
func (e *clientTimeoutError) Timeout() bool     { return true }
func (e *clientTimeoutError) Temporary() bool   { return true }
func (e *clientTimeoutError) Is(err error) bool { return err == context.DeadlineExceeded }

// timedOut is the Client's didTimeout: the attempt's deadline has passed
// (whatever the error was).
func (p *plainHTTP) timedOut() bool {
	return p.ownDeadline && time.Now().After(p.deadline)
}

func (p *plainHTTP) RoundTrip(req *http.Request) (*http.Response, error) {
	var resp *http.Response
	var err error
	if ruri, ok := writesItself(req); ok {
		resp, err = p.roundTrip(req, ruri)
	} else if resp, err = p.transport.RoundTrip(req); err == nil && p.ownDeadline {
		resp.Body = &timedBody{rc: resp.Body, p: p}
	}
	if err != nil {
		if p.timedOut() {
			err = &clientTimeoutError{err.Error() + timeoutAwaitingHeaders}
		}
		return nil, err
	}
	return resp, nil
}

// timedBody is the Client's cancelTimerBody for an answer the Transport
// read: a read error past the deadline says so.
type timedBody struct {
	rc io.ReadCloser
	p  *plainHTTP
}

func (b *timedBody) Read(buf []byte) (int, error) {
	n, err := b.rc.Read(buf)
	if err != nil && err != io.EOF && b.p.timedOut() {
		err = &clientTimeoutError{err.Error() + timeoutReadingBody}
	}
	return n, err
}

func (b *timedBody) Close() error { return b.rc.Close() }

// writesItself reports whether plainHTTP sends req itself, and its
// request-URI: a plain-http GET without body whose host, URI and headers
// Request.Write and the Transport pass unchanged, without a user
// Connection or Upgrade header (the Transport's "Connection: close" then
// depends on their tokens) and without a client trace (its hooks are the
// Transport's to call).
func writesItself(req *http.Request) (string, bool) {
	if req.URL.Scheme != "http" || req.Method != http.MethodGet || req.Close ||
		(req.Body != nil && req.Body != http.NoBody) || len(req.Trailer) != 0 ||
		req.URL.Host == "" || !plainHost(req.URL.Host) || !plainHost(req.Host) {
		return "", false
	}
	if _, ok := req.Header["Connection"]; ok {
		return "", false
	}
	if _, ok := req.Header["Upgrade"]; ok {
		return "", false
	}
	for k, vv := range req.Header {
		if !validHeaderName(k) {
			return "", false
		}
		for _, v := range vv {
			if !validHeaderValue(v) {
				return "", false
			}
		}
	}
	ruri := req.URL.RequestURI()
	if !plainURI(ruri) || httptrace.ContextClientTrace(req.Context()) != nil {
		return "", false
	}
	return ruri, true
}

// plainHost: only letters, digits and . - _ : [ ] (a name, an IPv4 or a
// bracketed IPv6 address without zone, a port), which Request.Write and
// the Transport's dial address take unchanged (no Punycode, no zone).
func plainHost(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_' || c == ':' || c == '[' || c == ']') {
			return false
		}
	}
	return true
}

// plainURI: no control characters, spaces or bytes beyond ASCII.
func plainURI(u string) bool {
	for i := 0; i < len(u); i++ {
		if u[i] <= ' ' || u[i] >= 0x7f {
			return false
		}
	}
	return true
}

// validHeaderName is httpguts.ValidHeaderFieldName: a non-empty token.
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			switch c {
			case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
			default:
				return false
			}
		}
	}
	return true
}

// validHeaderValue is httpguts.ValidHeaderFieldValue: no control bytes
// but the tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// dialAddr is the Transport's canonicalAddr for a plain host: the port,
// or 80.
func dialAddr(req *http.Request) string {
	port := req.URL.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(req.URL.Hostname(), port)
}

// roundTrip dials, writes req and reads the final answer's headers, all
// in this goroutine. The request's context ending (the attempt's
// deadline, the worker stopping) aborts the connection's reads and
// writes at once, and the error is then the context's cause, as the
// Transport's.
func (p *plainHTTP) roundTrip(req *http.Request, ruri string) (*http.Response, error) {
	ctx := req.Context()
	nc, err := p.dialer.DialContext(ctx, "tcp", dialAddr(req))
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	c := h1Conns.Get().(*h1Conn)
	c.reset(nc)
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(aLongTimeAgo) })
	resp, err := c.exchange(req, ruri)
	if err != nil {
		stop()
		c.release()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	if resp.Body == http.NoBody {
		stop()
		c.release()
		return resp, nil
	}
	resp.Body = &h1Body{body: resp.Body, ctx: ctx, c: c, stop: stop, p: p}
	return resp, nil
}

// aLongTimeAgo is a deadline that has passed: it aborts blocked I/O.
var aLongTimeAgo = time.Unix(1, 0)

// maxResponseHeaderBytes is the Transport's default limit on an answer's
// headers (1xx answers included).
const maxResponseHeaderBytes = 10 << 20

// h1Conn is one probe connection and its buffers. Connections are pooled
// for their buffers only: the socket is closed after every exchange.
type h1Conn struct {
	nc net.Conn
	br *bufio.Reader
	bw *bufio.Writer
	// readLimit bounds the headers as the Transport's persistConn does.
	readLimit int64
	written   int64
}

var h1Conns = sync.Pool{New: func() any {
	c := new(h1Conn)
	c.br = bufio.NewReaderSize(c, 4<<10)
	c.bw = bufio.NewWriterSize(c, 4<<10)
	return c
}}

func (c *h1Conn) reset(nc net.Conn) {
	c.nc = nc
	c.br.Reset(c)
	c.bw.Reset(c)
	c.readLimit = maxResponseHeaderBytes
	c.written = 0
}

// release closes the socket and gives the buffers back.
func (c *h1Conn) release() {
	_ = c.nc.Close()
	c.nc = nil
	h1Conns.Put(c)
}

func (c *h1Conn) Read(b []byte) (int, error) {
	if c.readLimit <= 0 {
		return 0, fmt.Errorf("read limit of %d bytes exhausted", maxResponseHeaderBytes)
	}
	if int64(len(b)) > c.readLimit {
		b = b[:c.readLimit]
	}
	n, err := c.nc.Read(b)
	c.readLimit -= int64(n)
	return n, err
}

func (c *h1Conn) Write(b []byte) (int, error) {
	n, err := c.nc.Write(b)
	c.written += int64(n)
	return n, err
}

// exchange writes req and reads the final answer's headers, with the
// Transport's errors for each step (context ends aside: the caller
// handles those).
func (c *h1Conn) exchange(req *http.Request, ruri string) (*http.Response, error) {
	if err := writeRequest(c.bw, req, ruri); err != nil {
		return nil, errBeforeAnswer(c, err)
	}
	// The Transport peeks at the first byte before parsing: a connection
	// closed without an answer is "EOF", not ReadResponse's
	// "unexpected EOF".
	if _, err := c.br.Peek(1); err != nil {
		return nil, err
	}
	for {
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			if c.readLimit <= 0 {
				err = fmt.Errorf("net/http: server response headers exceeded %d bytes; aborted", maxResponseHeaderBytes)
			}
			return nil, fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", err)
		}
		// The Transport skips 1xx answers but 101, which ends the
		// exchange (the connection then belongs to the body).
		if code := resp.StatusCode; code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
			continue
		}
		c.readLimit = 1<<63 - 1 // no limit on bodies
		if resp.StatusCode == http.StatusSwitchingProtocols {
			resp.Body = io.NopCloser(c.br)
		}
		return resp, nil
	}
}

// errBeforeAnswer is the Transport's error for a failed write: the bare
// error when nothing was sent, else a broken connection.
func errBeforeAnswer(c *h1Conn, err error) error {
	if c.written == 0 {
		return err
	}
	return fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", err)
}

// reqWriteExclude are the headers Request.Write writes apart from the
// rest, or not at all.
var reqWriteExclude = map[string]bool{"Host": true, "User-Agent": true, "Content-Length": true, "Transfer-Encoding": true, "Trailer": true}

// writeRequest writes req (a GET without body that writesItself
// accepted) as the Transport with keep-alives off writes it:
// Request.Write's request line, Host, User-Agent (Go's default unless
// the header is there; none when empty), the other headers sorted, then
// the Transport's "Connection: close", and flushes.
func writeRequest(bw *bufio.Writer, req *http.Request, ruri string) error {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	_, _ = bw.WriteString("GET ")
	_, _ = bw.WriteString(ruri)
	_, _ = bw.WriteString(" HTTP/1.1\r\nHost: ")
	_, _ = bw.WriteString(host)
	_, _ = bw.WriteString("\r\n")
	ua := "Go-http-client/1.1"
	if _, ok := req.Header["User-Agent"]; ok {
		ua = req.Header.Get("User-Agent")
	}
	// Request.Write skips only an empty value; one of blanks is trimmed
	// after that check and sent empty.
	if ua != "" {
		_, _ = bw.WriteString("User-Agent: ")
		_, _ = bw.WriteString(trimHeaderValue(ua))
		_, _ = bw.WriteString("\r\n")
	}
	if err := req.Header.WriteSubset(bw, reqWriteExclude); err != nil {
		return err
	}
	_, _ = bw.WriteString("Connection: close\r\n\r\n")
	return bw.Flush()
}

// trimHeaderValue is textproto.TrimString: a valid value has no newline
// for Request.Write to replace, only spaces and tabs to trim.
func trimHeaderValue(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// errReadOnClosedBody is net/http's text for reading a closed body.
var errReadOnClosedBody = errors.New("http: read on closed response body")

// h1Body is the answer's body: the connection is closed (and its buffers
// pooled) at the body's first error or end, or when it is closed. Its
// errors are the Transport's and the Client's: the context's cause when
// the context ended, with the Client's words when past the deadline.
type h1Body struct {
	body io.ReadCloser
	ctx  context.Context
	c    *h1Conn
	stop func() bool
	p    *plainHTTP
	rerr error // sticky, as the Transport's
	done bool  // closed
}

func (b *h1Body) Read(buf []byte) (int, error) {
	if b.done {
		return 0, errReadOnClosedBody
	}
	if b.rerr != nil {
		return 0, b.rerr
	}
	n, err := b.body.Read(buf)
	if err == nil {
		return n, nil
	}
	b.rerr = err
	b.end()
	if err == io.EOF {
		return n, err
	}
	if b.ctx.Err() != nil {
		err = context.Cause(b.ctx)
	}
	if b.p.timedOut() {
		err = &clientTimeoutError{err.Error() + timeoutReadingBody}
	}
	return n, err
}

func (b *h1Body) Close() error {
	b.done = true
	b.end()
	return nil
}

// end closes the connection once.
func (b *h1Body) end() {
	if b.c == nil {
		return
	}
	b.stop()
	b.c.release()
	b.c = nil
}

package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// MaxHTTPBody is how much of a response body an HTTP probe reads (10 KiB,
// as the kubelet). A longer body is cut, not an error.
const MaxHTTPBody = 10 << 10

// maxRedirects: the kubelet follows nine same-host redirects; the tenth
// fails the probe.
const maxRedirects = 10

// newHTTPTransport is the one transport every HTTP probe shares. Sharing is
// safe because keep-alives are off: each attempt still gets a fresh
// connection, as with the kubelet, but nothing is rebuilt per attempt.
func newHTTPTransport(d *net.Dialer) *http.Transport {
	return &http.Transport{
		// Probes go straight to the container: proxy env vars would route
		// them through the node's proxy, so the kubelet ignores them.
		Proxy:       nil,
		DialContext: d.DialContext,
		// Containers serve self-signed certificates; the kubelet never
		// verifies and presents no client certificate.
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // kubelet semantics
		TLSHandshakeTimeout: 10 * time.Second,
		DisableKeepAlives:   true,
		// No Accept-Encoding of our own (a user's passes through untouched).
		DisableCompression: true,
		// The kubelet's transport is configured for HTTP/2, so an HTTPS
		// server that offers h2 is probed over h2.
		ForceAttemptHTTP2: true,
	}
}

// newH2CTransport is newHTTPTransport speaking HTTP/2 with prior knowledge
// over plain TCP (h2c) and nothing else: AttemptH2C's.
func newH2CTransport(d *net.Dialer) *http.Transport {
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	return &http.Transport{
		Proxy:              nil,
		DialContext:        d.DialContext,
		Protocols:          &protos,
		DisableKeepAlives:  true,
		DisableCompression: true,
	}
}

// RedirectWarningPrefix starts the message of a Warning: a 3xx the probe
// did not follow, the response body after it.
const RedirectWarningPrefix = "Probe terminated redirects, Response body: "

// preparedHTTP is an httpGet probe's request as newHTTPRequest builds it
// (without a context), or the error building it gave: what every attempt
// of the same probe against the same target sends.
type preparedHTTP struct {
	req *http.Request
	err error
}

// prepareHTTP builds h's request against t once.
func (r *Runner) prepareHTTP(h *corev1.HTTPGetAction, t Target) *preparedHTTP {
	req, err := r.newHTTPRequest(context.Background(), h, t)
	return &preparedHTTP{req: req, err: err}
}

// httpProbe makes one attempt of h against t; prep, when not nil, is
// the request prepared for them (Bind), else it is built now.
func (r *Runner) httpProbe(ctx context.Context, transport *http.Transport, h *corev1.HTTPGetAction, t Target, timeout time.Duration, prep *preparedHTTP) (Result, string, int, error) {
	// A plain-HTTP probe is sent by plainHTTP in this goroutine; its
	// attempt's deadline is a context deadline, not Client.Timeout (see
	// plainHTTP).
	var plain *plainAttempt
	if transport == r.transport && !r.transportOnly && (h.Scheme == "" || strings.EqualFold(string(h.Scheme), "http")) {
		var cancel context.CancelFunc
		plain, ctx, cancel = r.newPlainAttempt(ctx, timeout)
		defer cancel()
	}
	var req *http.Request
	var err error
	if prep == nil {
		req, err = r.newHTTPRequest(ctx, h, t)
	} else if err = prep.err; err == nil {
		// A shallow copy: net/http reads the URL and headers of the
		// request it is given and never writes them (a redirect is a
		// new request with copied headers), so attempts can share them.
		req = prep.req.WithContext(ctx)
	}
	if err != nil {
		return Error, "", 0, err
	}
	var res *http.Response
	if plain != nil {
		res, err = plain.client.Do(req)
	} else {
		client := http.Client{Transport: transport, Timeout: timeout, CheckRedirect: sameHostRedirects}
		res, err = client.Do(req)
	}
	if err != nil {
		// Refused, timed out before headers, too many redirects: the
		// container failed, and the message is the client's error text.
		return Failure, err.Error(), 0, nil
	}
	defer func() { _ = res.Body.Close() }()
	code := res.StatusCode
	routed, haveRouted := routedMessage(res.Header, t.MessageHeader)

	buf := bodyBufs.Get().(*[MaxHTTPBody]byte)
	defer bodyBufs.Put(buf)
	n, err := readAtMost(res.Body, buf[:])
	if err != nil {
		// The headers arrived but the body broke (timeout, unexpected EOF):
		// the kubelet counts that as a probe error, so the tick retries.
		if haveRouted {
			err = errors.New(routed)
		}
		return Error, "", code, err
	}
	var result Result
	var msg string
	switch {
	case code >= 200 && code < 300:
		result = Success
	case code >= 300 && code < 400:
		// A redirect that was not followed (other host, no Location, 304)
		// still counts as success, with a warning.
		result, msg = Warning, RedirectWarningPrefix+string(buf[:n])
	default:
		// The body is deliberately left out, as the kubelet does.
		result, msg = Failure, fmt.Sprintf("HTTP probe failed with statuscode: %d", code)
	}
	if haveRouted {
		msg = routed
	}
	return result, msg, code, nil
}

// routedMessage reads the Go-quoted message in header name, if the target
// asked for one and the answer carries a well-formed one.
func routedMessage(h http.Header, name string) (string, bool) {
	if name == "" {
		return "", false
	}
	v, ok := h[http.CanonicalHeaderKey(name)]
	if !ok || len(v) == 0 {
		return "", false
	}
	msg, err := strconv.Unquote(v[0])
	if err != nil {
		return "", false
	}
	return msg, true
}

var bodyBufs = sync.Pool{New: func() any { return new([MaxHTTPBody]byte) }}

// readAtMost fills buf from r until EOF or buf is full; a full buf means the
// body was cut, which is not an error. (io.ReadFull would not do: it reports
// a short body as io.ErrUnexpectedEOF, the same error net/http gives for a
// body that breaks off, and only the latter is a probe error.)
func readAtMost(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// newHTTPRequest builds the request as the kubelet does, quirks included.
func (r *Runner) newHTTPRequest(ctx context.Context, h *corev1.HTTPGetAction, t Target) (*http.Request, error) {
	scheme := strings.ToLower(string(h.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := h.Host
	if host == "" {
		host = t.PodIP
	}
	port, err := resolvePort(h.Port, t.Ports)
	if err != nil {
		return nil, err
	}
	u := probeURL(scheme, host, port, h.Path)

	headers := make(http.Header, len(h.HTTPHeaders)+2)
	for _, hd := range h.HTTPHeaders {
		headers.Add(hd.Name, hd.Value)
	}
	// Any user User-Agent, even empty, replaces ours. net/http then sends
	// only the first value, and none when that is empty.
	if _, ok := headers["User-Agent"]; !ok {
		headers.Set("User-Agent", r.userAgent)
	}
	// Only the first Accept decides: an empty first value drops them all,
	// while ["x", ""] keeps both.
	if _, ok := headers["Accept"]; !ok {
		headers.Set("Accept", "*/*")
	} else if headers.Get("Accept") == "" {
		headers.Del("Accept")
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header = headers
	// A Host header names the virtual host; it plays no part in redirects.
	req.Host = headers.Get("Host")
	return req, nil
}

// probeURL joins the probe's parts. The path is parsed as a URL so a query
// survives; a path that does not parse is kept verbatim as a path, which
// then goes out escaped ("/%zz?a=b" is sent as "/%25zz%3Fa=b"). A path
// without a leading "/" gets one when the URL is written.
func probeURL(scheme, host string, port int, path string) *url.URL {
	u, err := url.Parse(path)
	if err != nil {
		u = &url.URL{Path: path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	return u
}

// plainAttempt is the client of one plain-HTTP attempt and its
// RoundTripper, made in one allocation.
type plainAttempt struct {
	client http.Client
	rt     plainHTTP
}

// newPlainAttempt returns the client of one plain-HTTP attempt bounded by
// timeout, and the context its request must carry: ctx with the
// attempt's deadline, ended by cancel.
func (r *Runner) newPlainAttempt(ctx context.Context, timeout time.Duration) (*plainAttempt, context.Context, context.CancelFunc) {
	a := &plainAttempt{rt: plainHTTP{dialer: r.dialer, transport: r.transport, deadline: time.Now().Add(timeout)}}
	a.client = http.Client{Transport: &a.rt, CheckRedirect: sameHostRedirects}
	// As the Client with a Timeout: a caller's context that ends first
	// keeps its own deadline, and its errors get no Client.Timeout words.
	d, ok := ctx.Deadline()
	a.rt.ownDeadline = !ok || a.rt.deadline.Before(d)
	ctx, cancel := context.WithDeadline(ctx, a.rt.deadline)
	return a, ctx, cancel
}

// errTooManyRedirects is net/http's own wording for the same limit.
var errTooManyRedirects = errors.New("stopped after 10 redirects")

// sameHostRedirects follows a redirect only to the hostname of the first
// request, compared as strings: "localhost" and "127.0.0.1" differ, while
// the port and scheme may change. Anything else ends the chain and the 3xx
// itself becomes the answer (a Warning).
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= maxRedirects {
		return errTooManyRedirects
	}
	return nil
}

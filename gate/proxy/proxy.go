package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Observer is told what the proxy does, for metrics.
type Observer interface {
	// HoldStarted and HoldEnded bracket a request held by the
	// ride-through.
	HoldStarted()
	HoldEnded()
	// Retried: one more connection attempt for a held request.
	Retried()
	// UpstreamError: a request failed after it may have reached the
	// container (502, not sent again).
	UpstreamError()
}

// Config configures a Proxy.
type Config struct {
	// Upstream is the serving container's HOST:PORT.
	Upstream string
	// Clock times the request's limits and the ride-through's backoff.
	Clock clock.WithDelayedExecution
	// Limits are the request's time limits (queue-proxy's three).
	Limits Limits
	// Limiter enforces CONTAINER_CONCURRENCY; nil is unlimited.
	Limiter *Limiter
	Logger  *slog.Logger
	// Observer is told of holds, retries and upstream errors.
	Observer Observer
	// Refused is told about each refused connection: the container is
	// down (restarting).
	Refused func(error)
	// Back returns a channel closed when the container is seen back.
	Back func() <-chan struct{}
	// H2COnly reports whether the serving container speaks only h2c
	// (found by HTTP/2 auto-detection): HTTP/1.1 requests then go to it
	// as h2c too. Nil: never.
	H2COnly func() bool
}

// Proxy forwards traffic to the serving container: HTTP/1.1 (including
// upgrades such as websockets) to HTTP/1.1, h2c to h2c, both through the
// ride-through.
type Proxy struct {
	h1, h2   *httputil.ReverseProxy
	t1, t2   *http.Transport
	clock    clock.WithDelayedExecution
	limits   Limits
	limiter  *Limiter
	log      *slog.Logger
	m        Observer
	upstream string
	h2cOnly  func() bool
}

// New builds a Proxy; it holds idle connections until CloseIdle.
func New(cfg Config) *Proxy {
	p := &Proxy{clock: cfg.Clock, limits: cfg.Limits, limiter: cfg.Limiter, log: cfg.Logger, m: cfg.Observer,
		upstream: cfg.Upstream, h2cOnly: cfg.H2COnly}
	clk, log, refused, back, m := cfg.Clock, cfg.Logger, cfg.Refused, cfg.Back, cfg.Observer
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	p.t1 = &http.Transport{
		// The ride-through needs to know whether a failed connection had
		// begun an answer.
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &upstreamConn{Conn: c}, nil
		},
		// Enough idle connections for every client connection to keep its
		// own: the default of 2 per host makes a busy proxy open and
		// close a connection per request.
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     90 * time.Second,
		// A proxy passes Accept-Encoding through; it must not add its own.
		DisableCompression: true,
	}
	var h2c http.Protocols
	h2c.SetUnencryptedHTTP2(true)
	p.t2 = &http.Transport{
		DialContext:        dialer.DialContext,
		Protocols:          &h2c,
		IdleConnTimeout:    90 * time.Second,
		DisableCompression: true,
	}
	errLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	for i, t := range []*http.Transport{p.t1, p.t2} {
		rp := &httputil.ReverseProxy{
			Transport:      &rideThrough{next: t, clock: clk, refused: refused, back: back, m: m, closeIdle: t.CloseIdleConnections},
			Rewrite:        p.rewrite,
			ModifyResponse: p.responseStarted,
			ErrorHandler:   p.fail,
			BufferPool:     bufferPool{},
			ErrorLog:       errLog,
		}
		if i == 0 {
			p.h1 = rp
		} else {
			p.h2 = rp
		}
	}
	return p
}

// Upstream is the serving container's HOST:PORT.
func (p *Proxy) Upstream() string { return p.upstream }

// CloseIdle drops idle connections to the serving container: after it
// refused a connection they lead to a process that is gone.
func (p *Proxy) CloseIdle() {
	p.t1.CloseIdleConnections()
	p.t2.CloseIdleConnections()
}

type stateKey struct{}

// Serve proxies one request within its time limits (see Limits);
// CONTAINER_CONCURRENCY requests at most are in the container at once.
func (p *Proxy) Serve(w *Recorder, r *http.Request) {
	ctx := r.Context()
	if p.limits.any() {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		st := newReqState(p.clock, p.limits, cancel, p.log, r)
		w.st = st
		defer func() {
			if st.end() {
				// A limit cut the response after it started: the proxy
				// aborted the copy. The body so far gets queue-proxy's
				// text, and the abort goes on to cut the response short.
				if v := recover(); v != nil {
					_, _ = io.WriteString(w, errRequestTimeout.Error())
					w.Flush()
					panic(v)
				}
			}
		}()
		ctx = context.WithValue(ctx, stateKey{}, st)
	}
	r = r.WithContext(ctx)
	if p.limiter != nil {
		if err := p.limiter.acquire(ctx); err != nil {
			p.fail(w, r, err)
			return
		}
		defer p.limiter.release()
	}
	if r.ProtoMajor == 1 && r.ContentLength != 0 {
		// Let an HTTP/1.1 client keep sending its body while the response
		// streams back (the server's default stops reading at the first
		// response write).
		_ = http.NewResponseController(w).EnableFullDuplex()
	}
	if r.ProtoMajor == 2 || (p.h2cOnly != nil && p.h2cOnly()) {
		p.h2.ServeHTTP(w, r)
		return
	}
	p.h1.ServeHTTP(w, r)
}

// Request headers of Knative's data path (knative.dev/networking's header
// names and the activator's).
const (
	// originalHostHeader carries the Host the activator replaced (so a
	// mesh routes on its own Host); queue-proxy restores it.
	originalHostHeader = "K-Original-Host"
)

// activatorHeaders are set by the activator for its own routing and
// removed by queue-proxy before the request reaches the container.
var activatorHeaders = []string{"Knative-Serving-Revision", "Knative-Serving-Namespace"}

// rewrite aims the request at the serving container as queue-proxy does:
// the Host the client asked for is kept (or restored from K-Original-Host),
// the activator's routing headers are removed, X-Forwarded-For is extended
// and Forwarded made from the X-Forwarded-* headers when absent. The query
// goes out verbatim.
func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	pr.Out.URL.Scheme = "http"
	pr.Out.URL.Host = p.upstream
	in, out := pr.In.Header, pr.Out.Header
	// ReverseProxy's Rewrite mode drops query parameters it cannot parse
	// (a ";" separator, a bad escape); queue-proxy's proxy passes them on.
	pr.Out.URL.RawQuery = pr.In.URL.RawQuery
	host := pr.In.Host
	if oh := out.Get(originalHostHeader); oh != "" {
		host = oh
		pr.Out.Host = oh
		out.Del(originalHostHeader)
	}
	for _, h := range activatorHeaders {
		out.Del(h)
	}
	if strings.TrimSpace(in.Get("Forwarded")) != "" {
		out["Forwarded"] = in["Forwarded"]
	} else if fwd := forwardedFrom(in); fwd != "" {
		out.Set("Forwarded", fwd)
	}
	if xff, ok := in["X-Forwarded-For"]; ok {
		out["X-Forwarded-For"] = xff
	}
	pr.SetXForwarded()
	// An earlier proxy (the ingress) knows the client's host and scheme.
	if v, ok := in["X-Forwarded-Host"]; ok {
		out["X-Forwarded-Host"] = v
	} else if host != pr.In.Host {
		out.Set("X-Forwarded-Host", host)
	}
	if v, ok := in["X-Forwarded-Proto"]; ok {
		out["X-Forwarded-Proto"] = v
	}
	// The server fills the inbound trailer map when the body ends; the
	// proxy's clone of it stays empty. Sharing the map lets the transport
	// send the values it finds after reading the body to its end.
	pr.Out.Trailer = pr.In.Trailer
	if pr.Out.Body != nil {
		rb := newReplayBody(pr.Out.Body)
		pr.Out.Body, pr.Out.GetBody = rb, rb.rewind
	}
}

// forwardedFrom builds an RFC 7239 Forwarded header from the X-Forwarded-*
// headers an earlier proxy set, as queue-proxy does for apps that read only
// Forwarded; "" when there are none.
func forwardedFrom(h http.Header) string {
	xff := strings.TrimSpace(h.Get("X-Forwarded-For"))
	host := strings.TrimSpace(h.Get("X-Forwarded-Host"))
	proto := strings.TrimSpace(h.Get("X-Forwarded-Proto"))
	if xff == "" && host == "" && proto == "" {
		return ""
	}
	var nodes []string
	if xff != "" {
		for _, n := range strings.Split(xff, ",") {
			n = strings.TrimSpace(n)
			if strings.Contains(n, ":") {
				n = `"[` + n + `]"` // an IPv6 address
			}
			nodes = append(nodes, n)
		}
	}
	var first []string
	if len(nodes) > 0 && nodes[0] != "" {
		first = append(first, "for="+nodes[0])
	}
	if host != "" {
		first = append(first, "host="+host)
	}
	if proto != "" {
		first = append(first, "proto="+proto)
	}
	elems := []string{strings.Join(first, ";")}
	for _, n := range nodes[min(1, len(nodes)):] {
		elems = append(elems, "for="+n)
	}
	return strings.Join(elems, ", ")
}

// responseStarted notes that the container's response headers arrived,
// unless a limit ended the request first (then 504).
func (p *Proxy) responseStarted(resp *http.Response) error {
	st, _ := resp.Request.Context().Value(stateKey{}).(*reqState)
	if st != nil && !st.responseStarted() {
		return errRequestTimeout
	}
	return nil
}

// fail answers a request the proxy could not complete.
func (p *Proxy) fail(rw http.ResponseWriter, r *http.Request, err error) {
	w, _ := rw.(*Recorder)
	cause := context.Cause(r.Context())
	switch {
	case errors.Is(cause, errRequestTimeout) || errors.Is(err, errRequestTimeout):
		if w != nil && w.status != 0 {
			return
		}
		rw.WriteHeader(http.StatusGatewayTimeout)
		_, _ = io.WriteString(rw, errRequestTimeout.Error())
	case r.Context().Err() != nil:
		// The client went away: nobody reads an answer.
		if w != nil {
			w.status = statusClientClosed
		}
	case errors.Is(err, errQueueFull):
		http.Error(rw, err.Error(), http.StatusServiceUnavailable)
	default:
		// The request may have reached the container: it is not sent
		// again. queue-proxy answers the same: the error, as http.Error
		// writes it.
		p.m.UpstreamError()
		p.log.Warn("request failed after reaching the serving container", "method", r.Method, "path", r.URL.Path, "error", err)
		http.Error(rw, err.Error(), http.StatusBadGateway)
	}
}

// statusClientClosed records a request whose client left before the
// answer (nginx's 499); it is never written.
const statusClientClosed = 499

// bufferPool recycles the proxy's copy buffers.
type bufferPool struct{}

var copyBuffers = sync.Pool{New: func() any { return new([32 << 10]byte) }}

func (bufferPool) Get() []byte  { return copyBuffers.Get().(*[32 << 10]byte)[:] }
func (bufferPool) Put(b []byte) { copyBuffers.Put((*[32 << 10]byte)(b)) }

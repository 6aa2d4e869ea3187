package proxy

import (
	"context"
	"errors"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/internal/h1"
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
	// Door, when set, decides within the request's time limits whether
	// it may go to the serving container now, waits until it may, or
	// hands it off to Handoff. Nil: every request goes at once.
	Door Door
	// Handoff is where the Door hands requests off (Knative's activator,
	// contract.EnvHandoffURL); nil: nowhere.
	Handoff *url.URL
}

// Door keeps requests from the serving container while it must not get
// any (the pod is not ready).
type Door interface {
	// Wait returns once r may go to the serving container (nil, nil);
	// or with the headers to set on r when it is to be handed off
	// instead; or with ctx's cause when ctx ends first. arrived is r's
	// arrival on the proxy's clock.
	Wait(ctx context.Context, r *http.Request, arrived time.Time) (handoff http.Header, err error)
	// Open reports whether a request may go to the serving container
	// right now (asked again once a CONTAINER_CONCURRENCY slot is won).
	Open() bool
}

// Proxy forwards traffic to the serving container: HTTP/1.1 (including
// upgrades such as websockets) to HTTP/1.1, h2c to h2c, both through the
// ride-through.
type Proxy struct {
	h1, h2 *httputil.ReverseProxy
	t1, t2 *http.Transport
	// fast sends bodiless idempotent HTTP/1.1 requests itself, every
	// other one through t1.
	fast     *h1.Client
	clock    clock.WithDelayedExecution
	limits   Limits
	limiter  *Limiter
	log      *slog.Logger
	m        Observer
	upstream string
	h2cOnly  func() bool
	door     Door
	// ho hands requests off to handoff; nil without one.
	ho      *httputil.ReverseProxy
	t3      *http.Transport
	handoff *url.URL
	// states recycles the requests' limits (timeout.go).
	states reqStates
	errLog *stdlog.Logger
}

// New builds a Proxy; it holds idle connections until CloseIdle.
func New(cfg Config) *Proxy {
	p := &Proxy{clock: cfg.Clock, limits: cfg.Limits, limiter: cfg.Limiter, log: cfg.Logger, m: cfg.Observer,
		upstream: cfg.Upstream, h2cOnly: cfg.H2COnly, door: cfg.Door, handoff: cfg.Handoff}
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
	p.fast = &h1.Client{Dial: p.t1.DialContext, Addr: cfg.Upstream, Fallback: p.t1, IdleTimeout: p.t1.IdleConnTimeout,
		MaxIdle: p.t1.MaxIdleConnsPerHost, Informational: informDirect}
	errLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	p.errLog = errLog
	for i, t := range []struct {
		http.RoundTripper
		closeIdle func()
	}{{p.fast, p.closeIdle1}, {p.t2, p.t2.CloseIdleConnections}} {
		rp := &httputil.ReverseProxy{
			Transport:      &rideThrough{next: t, clock: clk, refused: refused, back: back, m: m, closeIdle: t.closeIdle},
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
	if cfg.Handoff != nil {
		// A plain transport: the activator answers or holds the request
		// itself, and a request handed off is never sent twice.
		p.t3 = &http.Transport{
			DialContext:         dialer.DialContext,
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		}
		p.ho = &httputil.ReverseProxy{
			Transport:      p.t3,
			Rewrite:        p.rewriteHandoff,
			ModifyResponse: p.responseStarted,
			ErrorHandler:   p.failHandoff,
			BufferPool:     bufferPool{},
			ErrorLog:       errLog,
		}
	}
	return p
}

// Upstream is the serving container's HOST:PORT.
func (p *Proxy) Upstream() string { return p.upstream }

// CloseIdle drops idle connections to the serving container: after it
// refused a connection they lead to a process that is gone.
func (p *Proxy) CloseIdle() {
	p.closeIdle1()
	p.t2.CloseIdleConnections()
	if p.t3 != nil {
		p.t3.CloseIdleConnections()
	}
}

// closeIdle1 drops the idle HTTP/1.1 connections: the fast path's and
// its fallback's.
func (p *Proxy) closeIdle1() {
	p.fast.CloseIdleConnections()
	p.t1.CloseIdleConnections()
}

type stateKey struct{}

// Serve proxies one request within its time limits (see Limits);
// CONTAINER_CONCURRENCY requests at most are in the container at once.
func (p *Proxy) Serve(w *Recorder, r *http.Request) {
	in, ctx := r, r.Context()
	var st *reqState
	if p.limits.any() {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		st = p.states.get(p.clock, p.limits, cancel, p.log, r)
		w.st = st
		defer func() {
			cutStarted := st.end()
			w.st = nil
			p.states.put(st)
			if cutStarted {
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
	var arrived time.Time
	if p.door != nil {
		if st != nil {
			arrived = time.Unix(0, st.start) // read already, on the same clock
		} else {
			arrived = p.clock.Now()
		}
	}
	for {
		if p.door != nil {
			handoff, err := p.door.Wait(ctx, r, arrived)
			if err != nil {
				p.fail(w, r, err)
				return
			}
			if handoff != nil {
				if p.handOff(w, r, handoff) {
					return
				}
				// The activator closed the connection before any answer:
				// the request waits at the door again (see failHandoff).
				continue
			}
		}
		if p.limiter == nil {
			break
		}
		if err := p.limiter.acquire(ctx); err != nil {
			p.fail(w, r, err)
			return
		}
		// The door may have closed while the request waited for its
		// slot: it waits at the door again, without the slot.
		if p.door == nil || p.door.Open() {
			defer p.limiter.release()
			break
		}
		p.limiter.release()
	}
	if p.serveDirect(w, in, r, st) {
		return
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
	out.Del(contract.HandoffHeader)
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

// handOff sends r to the activator with the headers the door gave,
// within r's time limits; the activator's answer goes back unchanged.
// It reports false when the hand-off failed before any answer and r may
// go to the door again: nothing was written to w then.
func (p *Proxy) handOff(w *Recorder, r *http.Request, h http.Header) bool {
	if p.ho == nil {
		p.fail(w, r, errors.New("the gate's door handed a request off, but no hand-off URL is configured"))
		return true
	}
	for k, vs := range h {
		r.Header[k] = vs
	}
	if r.ProtoMajor == 1 && r.ContentLength != 0 {
		_ = http.NewResponseController(w).EnableFullDuplex()
	}
	var failed handoffFailure
	p.ho.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), handoffFailureKey{}, &failed)))
	return failed.err == nil
}

// handoffFailure notes a hand-off that failed before any answer, for a
// request that may be sent again.
type handoffFailure struct{ err error }

type handoffFailureKey struct{}

// rewriteHandoff aims a request at the activator as it came: method,
// path, query, Host and headers (K-Original-Host and X-Forwarded-* too:
// the activator keeps an original host it finds); the body streams
// through unread by the gate.
func (p *Proxy) rewriteHandoff(pr *httputil.ProxyRequest) {
	pr.Out.URL.Scheme = p.handoff.Scheme
	pr.Out.URL.Host = p.handoff.Host
	pr.Out.URL.RawQuery = pr.In.URL.RawQuery
	// Rewrite mode drops the forwarding headers; a hand-off keeps them.
	for _, k := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		if v, ok := pr.In.Header[k]; ok {
			pr.Out.Header[k] = v
		}
	}
	pr.Out.Trailer = pr.In.Trailer
}

// failHandoff answers a request the activator did not answer — unless
// the request is idempotent (the rule Go's transport and the ride-through
// resend by): then nothing is written and it waits at the door again,
// where it is handed off again after its backoff (counted against
// contract.MaxHandoffs) or proxied once the pod is ready. Knative's
// activator (v0.50) closes the connection without an answer when its
// handler panics, which it does when a request races the removal of a
// revision's last ready pod with containerConcurrency 0 (its
// power-of-two-choices balancer indexes an empty target list) — the very
// moment a gate hands requests off.
func (p *Proxy) failHandoff(rw http.ResponseWriter, r *http.Request, err error) {
	if context.Cause(r.Context()) != nil {
		p.fail(rw, r, err)
		return
	}
	if f, _ := r.Context().Value(handoffFailureKey{}).(*handoffFailure); f != nil && idempotent(r) {
		f.err = err
		p.log.Warn("hand-off to the activator failed before an answer; the request waits at the door again",
			"handoff", p.handoff.String(), "method", r.Method, "path", r.URL.Path, "error", err)
		return
	}
	p.log.Warn("hand-off to the activator failed", "handoff", p.handoff.String(), "method", r.Method, "path", r.URL.Path, "error", err)
	http.Error(rw, err.Error(), http.StatusBadGateway)
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

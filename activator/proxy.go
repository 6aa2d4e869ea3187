package activator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	"github.com/podgate/podgate/internal/h1"
)

// ConnectError is a failed dial to a gate. Nothing of the request was sent,
// so it may go to another backend.
type ConnectError struct {
	Addr string
	Err  error
}

func (e *ConnectError) Error() string { return fmt.Sprintf("connect to %s: %v", e.Addr, e.Err) }
func (e *ConnectError) Unwrap() error { return e.Err }

// NewTransport is the default transport for proxied requests: direct
// (proxy environment ignored), keep-alive with enough idle connections per
// pod for a busy target, compression left to the two ends, and dial
// failures tagged as ConnectError.
func NewTransport(connectTimeout time.Duration) *http.Transport {
	return newTransport(connectTimeout, nil)
}

// newTransport is NewTransport over dial (nil: a net.Dialer); the connect
// timeout bounds every dial either way.
func newTransport(connectTimeout time.Duration, dial func(context.Context, string, string) (net.Conn, error)) *http.Transport {
	return transportOver(connectDial(connectTimeout, dial))
}

// connectDial is dial (nil: a net.Dialer) within the connect timeout, its
// failures tagged as ConnectError: nothing of the request was sent.
func connectDial(connectTimeout time.Duration, dial func(context.Context, string, string) (net.Conn, error)) func(context.Context, string, string) (net.Conn, error) {
	if dial == nil {
		dial = (&net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, connectTimeout)
		defer cancel()
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, &ConnectError{Addr: addr, Err: err}
		}
		return c, nil
	}
}

// Idle connections per gate, and how long one stays open unused: the
// Transport's and the fast clients' alike.
const (
	maxIdlePerGate  = 1024
	idleConnTimeout = 90 * time.Second
)

// transportOver is the default transport over a tagged dial.
func transportOver(dial func(context.Context, string, string) (net.Conn, error)) *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           dial,
		MaxIdleConnsPerHost:   maxIdlePerGate,
		IdleConnTimeout:       idleConnTimeout,
		DisableCompression:    true,
		ExpectContinueTimeout: time.Second,
	}
}

// newFast is b's fast HTTP/1.1 client with the default transport: it
// sends the bodiless idempotent requests (GETs) to b's gate itself, in
// the request's goroutine on a kept-alive connection of b's own, and the
// others through the shared Transport. The Transport hands each request
// and answer between two goroutines per connection, which cost the front
// door as much CPU as the rest of its hop. Nil with a custom Transport.
func (t *Target) newFast(b *backend) *h1.Client {
	if t.cfg.fastDial == nil {
		return nil
	}
	return &h1.Client{Dial: t.cfg.fastDial, Addr: b.addr, Fallback: t.cfg.Transport,
		IdleTimeout: idleConnTimeout, MaxIdle: maxIdlePerGate}
}

// newProxy is b's reverse proxy. The Host header is kept (the gate and the
// app see the name the client asked for, as behind Knative's activator),
// and X-Forwarded-For extends the incoming chain; X-Forwarded-Host and
// -Proto are set unless a proxy in front set them.
func (t *Target) newProxy(b *backend) *httputil.ReverseProxy {
	u := &url.URL{Scheme: "http", Host: b.addr}
	transport := t.cfg.Transport
	if b.fast != nil {
		transport = b.fast
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host
			if prior := pr.In.Header["X-Forwarded-For"]; len(prior) > 0 {
				pr.Out.Header["X-Forwarded-For"] = prior
			}
			host, proto := pr.In.Header.Get("X-Forwarded-Host"), pr.In.Header.Get("X-Forwarded-Proto")
			pr.SetXForwarded()
			if host != "" {
				pr.Out.Header.Set("X-Forwarded-Host", host)
			}
			if proto != "" {
				pr.Out.Header.Set("X-Forwarded-Proto", proto)
			}
		},
		Transport:      transport,
		BufferPool:     copyBuffers,
		ModifyResponse: respond,
		ErrorHandler:   func(w http.ResponseWriter, r *http.Request, err error) { t.proxyError(b, w, r, err) },
		ErrorLog:       slog.NewLogLogger(t.cfg.Logger.Handler(), slog.LevelWarn),
	}
}

// respond marks the response as started; from here on the request timeout
// no longer applies. If the timeout won the race, the response is dropped
// and the client gets the 504.
func respond(resp *http.Response) error {
	rs := stateOf(resp.Request.Context())
	if rs == nil || rs.phase.CompareAndSwap(phaseWaiting, phaseResponding) {
		return nil
	}
	return errTimeout
}

// proxyError decides what a failed attempt becomes: a retry when the dial
// failed (nothing sent), 504 when the timeout cut it, nothing when the
// client left, else 502.
func (t *Target) proxyError(b *backend, w http.ResponseWriter, r *http.Request, err error) {
	rs := stateOf(r.Context())
	var ce *ConnectError
	switch {
	case rs != nil && rs.phase.Load() == phaseTimedOut:
		writeTimeout(w)
	case r.Context().Err() != nil:
		// The client went away: there is no one to answer.
		if rs != nil {
			rs.clientGone = true
		}
	case errors.As(err, &ce) && rs != nil && !rs.body.started():
		rs.retry = true
		t.connectFailed(b, err)
	default:
		if rs != nil {
			rs.rec.fail(err)
		}
		t.cfg.Logger.Warn("proxy error", "target", t.name, "pod", b.name, "err", err)
		http.Error(w, "activator: "+err.Error(), http.StatusBadGateway)
	}
}

// copyBuffers recycles the 32 KiB buffers ReverseProxy copies bodies
// through; without a pool it allocates one per request.
var copyBuffers = &bufferPool{pool: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}

type bufferPool struct{ pool sync.Pool }

func (p *bufferPool) Get() []byte  { return *p.pool.Get().(*[]byte) }
func (p *bufferPool) Put(b []byte) { p.pool.Put(&b) }

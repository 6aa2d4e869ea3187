package proxy

import (
	"context"
	"io"
	"mime"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"strings"
	"sync"

	"golang.org/x/net/http/httpguts"

	"github.com/podgate/podgate/internal/h1"
)

// serveDirect does httputil.ReverseProxy's work for the request h1.Client
// sends itself (HTTP/1.x, no body, idempotent, no upgrade) without the
// copies ReverseProxy makes of every request: a clone of the request,
// its header and URL, a context carrying a client trace (for 1xx
// answers) and another request copy for it, a header map grown value by
// value for the answer. The outbound request's header and URL come from
// a pool, the rules are the same functions (rewrite, the ride-through,
// fail, responseStarted), and the answer goes back as ReverseProxy sends
// it: hop-by-hop headers removed, trailers announced and passed on,
// flushed at once when it streams. It reports false, having done
// nothing, for any other request; in is the request as the server read
// it, out the request's copy with its limits.
func (p *Proxy) serveDirect(w *Recorder, in, out *http.Request, st *reqState) bool {
	if st == nil || in.ProtoMajor != 1 || in.ContentLength != 0 || !h1.FastPath(in) ||
		len(in.Header["Upgrade"]) > 0 || (p.h2cOnly != nil && p.h2cOnly()) {
		return false
	}
	o := outbounds.Get().(*outbound)
	o.prepare(in, out)
	p.rewrite(&httputil.ProxyRequest{In: in, Out: out})
	pooled := h1.FastPath(out) // else the Transport gets it, and may keep it
	if pooled {
		defer o.release()
	}
	st.informTo(w)
	resp, err := p.h1.Transport.RoundTrip(out)
	st.informTo(nil)
	if err != nil {
		p.fail(w, out, err)
		return true
	}
	removeHopByHop(resp.Header)
	if err := p.responseStarted(resp); err != nil {
		resp.Body.Close()
		p.fail(w, out, err)
		return true
	}
	p.answer(w, resp)
	return true
}

// informDirect passes a 1xx answer of the serving container on to the
// client of serveDirect's request (h1.Client.Informational), with its
// headers, then none left for the final answer, as ReverseProxy's client
// trace passes it on. Other requests' go to that trace.
func informDirect(req *http.Request, code int, header http.Header) bool {
	st, _ := req.Context().Value(stateKey{}).(*reqState)
	if st == nil || st.inform == nil {
		return false
	}
	h := st.inform.Header()
	for k, vv := range header {
		h[k] = append(h[k], vv...)
	}
	st.inform.WriteHeader(code)
	clear(h)
	return true
}

// outbound is a pooled outbound request's header and URL.
type outbound struct {
	h http.Header
	u url.URL
}

var outbounds = sync.Pool{New: func() any { return &outbound{h: make(http.Header, 16)} }}

// Shared header values, never appended to (the outbound header is only
// Set and deleted from).
var (
	teTrailers = []string{"trailers"}
	noUA       = []string{""}
)

// prepare makes out what ReverseProxy makes of in before its Rewrite
// hook: the header without hop-by-hop and forwarding headers (values
// shared with in's: out's are only replaced or deleted, never appended
// to), no User-Agent of Go's own, no body.
func (o *outbound) prepare(in, out *http.Request) {
	for k, vv := range in.Header {
		o.h[k] = vv
	}
	removeHopByHop(o.h)
	if httpguts.HeaderValuesContainsToken(in.Header["Te"], "trailers") {
		o.h["Te"] = teTrailers
	}
	for _, k := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		delete(o.h, k)
	}
	if _, ok := o.h["User-Agent"]; !ok {
		o.h["User-Agent"] = noUA
	}
	o.u = *in.URL
	out.Header, out.URL, out.Body, out.Close = o.h, &o.u, nil, false
}

func (o *outbound) release() {
	clear(o.h)
	o.u = url.URL{}
	outbounds.Put(o)
}

// hopHeaders are ReverseProxy's hop-by-hop headers.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// removeHopByHop removes the headers the Connection header names and the
// hop-by-hop ones, as ReverseProxy does.
func removeHopByHop(h http.Header) {
	for _, f := range h["Connection"] {
		for sf := range strings.SplitSeq(f, ",") {
			if sf = textproto.TrimString(sf); sf != "" {
				h.Del(sf)
			}
		}
	}
	for _, f := range hopHeaders {
		delete(h, f)
	}
}

// answer writes resp to w as ReverseProxy does.
func (p *Proxy) answer(w *Recorder, resp *http.Response) {
	dst := w.Header()
	for k, vv := range resp.Header {
		if old, ok := dst[k]; ok {
			dst[k] = append(old, vv...)
		} else {
			dst[k] = vv
		}
	}
	announced := len(resp.Trailer)
	if announced > 0 {
		keys := make([]string, 0, announced)
		for k := range resp.Trailer {
			keys = append(keys, k)
		}
		dst.Add("Trailer", strings.Join(keys, ", "))
	}
	w.WriteHeader(resp.StatusCode)
	if err := p.copyBody(w, resp); err != nil {
		defer resp.Body.Close()
		panic(http.ErrAbortHandler) // the response is cut short, as ReverseProxy cuts it
	}
	resp.Body.Close() // now, to fill resp.Trailer
	if len(resp.Trailer) > 0 {
		w.Flush() // chunked, so the trailers can follow
	}
	if len(resp.Trailer) == announced {
		for k, vv := range resp.Trailer {
			dst[k] = append(dst[k], vv...)
		}
		return
	}
	for k, vv := range resp.Trailer {
		dst[http.TrailerPrefix+k] = append(dst[http.TrailerPrefix+k], vv...)
	}
}

// copyBody copies the body with a pooled buffer; a streamed answer
// (server-sent events, or no length) is flushed after every write, its
// headers at once.
func (p *Proxy) copyBody(w *Recorder, resp *http.Response) error {
	stream := resp.ContentLength == -1
	if ct := resp.Header.Get("Content-Type"); !stream && containsFold(ct, "event-stream") {
		base, _, _ := mime.ParseMediaType(ct)
		stream = base == "text/event-stream"
	}
	if stream {
		w.Flush()
	}
	buf := copyBuffers.Get().(*[32 << 10]byte)
	defer copyBuffers.Put(buf)
	for {
		nr, rerr := resp.Body.Read(buf[:])
		if rerr != nil && rerr != io.EOF && rerr != context.Canceled {
			p.errLog.Printf("httputil: ReverseProxy read error during body copy: %v", rerr)
		}
		if nr > 0 {
			nw, werr := w.Write(buf[:nr])
			if werr != nil {
				return werr
			}
			if nw != nr {
				return io.ErrShortWrite
			}
			if stream {
				w.Flush()
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// containsFold reports whether s contains the lower-case ASCII word sub,
// in any case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

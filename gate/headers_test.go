package gate

import (
	"context"
	"net/http"
	"sync"
	"testing"
)

// seenRequest is what the serving container received.
type seenRequest struct {
	host, rawQuery, proto string
	header                http.Header
}

// recordingUpstream is a real server (HTTP/1.1 and h2c) that keeps the
// last request it got.
type recordingUpstream struct {
	addr string
	mu   sync.Mutex
	last seenRequest
}

func startRecordingUpstream(t testing.TB) *recordingUpstream {
	u := &recordingUpstream{}
	u.addr = startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.last = seenRequest{host: r.Host, rawQuery: r.URL.RawQuery, proto: r.Proto, header: r.Header.Clone()}
		u.mu.Unlock()
	}))
	return u
}

func (u *recordingUpstream) seen() seenRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.last
}

// TestRequestHeadersAsQueueProxy pins, through a real upstream that
// records what reached it, how the gate rewrites a request on its way to
// the serving container, over HTTP/1.1 and h2c alike: queue-proxy's rules,
// and where the gate differs, its own (marked).
func TestRequestHeadersAsQueueProxy(t *testing.T) {
	up := startRecordingUpstream(t)
	tg := startGate(t, gateConfig(t, up.addr), Options{})
	h2c := h2cClient()
	defer h2c.CloseIdleConnections()
	type check func(t *testing.T, got seenRequest)
	header := func(name, want string) check {
		return func(t *testing.T, got seenRequest) {
			t.Helper()
			if v := got.header.Get(name); v != want {
				t.Errorf("%s = %q, want %q", name, v, want)
			}
		}
	}
	absent := func(name string) check {
		return func(t *testing.T, got seenRequest) {
			t.Helper()
			if v, ok := got.header[http.CanonicalHeaderKey(name)]; ok {
				t.Errorf("%s = %q reached the container, want it removed", name, v)
			}
		}
	}
	host := func(want string) check {
		return func(t *testing.T, got seenRequest) {
			t.Helper()
			if got.host != want {
				t.Errorf("Host = %q, want %q", got.host, want)
			}
		}
	}
	for _, tc := range []struct {
		name   string
		host   string
		query  string
		header http.Header
		checks []check
	}{
		{"the activator's Knative-Serving-Revision and -Namespace are removed, K-Proxy-Request kept", "hello.default.example.com", "",
			http.Header{"Knative-Serving-Revision": {"hello-00001"}, "Knative-Serving-Namespace": {"default"}, "K-Proxy-Request": {"activator"}},
			[]check{absent("Knative-Serving-Revision"), absent("Knative-Serving-Namespace"), header("K-Proxy-Request", "activator")}},
		{"K-Original-Host replaces Host and is removed", "hello-00001.default.svc.cluster.local", "",
			http.Header{"K-Original-Host": {"hello.default.example.com"}},
			[]check{host("hello.default.example.com"), absent("K-Original-Host"),
				// The gate's own: X-Forwarded-Host names the original host too.
				header("X-Forwarded-Host", "hello.default.example.com")}},
		{"without K-Original-Host the Host is kept", "hello.default.example.com", "", nil,
			[]check{host("hello.default.example.com"), absent("K-Original-Host")}},
		{"X-Forwarded-For is appended to, several headers folded into one", "h", "",
			http.Header{"X-Forwarded-For": {"203.0.113.7", "10.0.0.1"}},
			[]check{header("X-Forwarded-For", "203.0.113.7, 10.0.0.1, 127.0.0.1")}},
		{"a direct client's address becomes X-Forwarded-For", "h", "", nil,
			[]check{header("X-Forwarded-For", "127.0.0.1"), absent("Forwarded")}},
		{"Forwarded is made from the X-Forwarded-* headers when absent", "h", "",
			http.Header{"X-Forwarded-For": {"203.0.113.7, 10.0.0.1"}, "X-Forwarded-Host": {"public.example"}, "X-Forwarded-Proto": {"https"}},
			[]check{header("Forwarded", "for=203.0.113.7;host=public.example;proto=https, for=10.0.0.1"),
				header("X-Forwarded-Host", "public.example"), header("X-Forwarded-Proto", "https")}},
		{"an empty Forwarded header counts as absent", "h", "",
			http.Header{"Forwarded": {""}, "X-Forwarded-For": {"203.0.113.7"}},
			[]check{header("Forwarded", "for=203.0.113.7")}},
		{"a Forwarded header is kept as it is", "h", "",
			http.Header{"Forwarded": {"for=198.51.100.1"}, "X-Forwarded-For": {"203.0.113.7"}},
			[]check{header("Forwarded", "for=198.51.100.1")}},
		{"a query goes out verbatim, unparsable parameters included", "h", "a=1;b=2&c=%zz&d",
			nil,
			[]check{func(t *testing.T, got seenRequest) {
				if got.rawQuery != "a=1;b=2&c=%zz&d" {
					t.Errorf("query %q, want a=1;b=2&c=%%zz&d", got.rawQuery)
				}
			}}},
		{"route tag, request id and probe-free Knative headers pass through", "h", "",
			http.Header{"Knative-Serving-Tag": {"blue"}, "Knative-Serving-Default-Route": {"false"}, "X-Request-Id": {"abc-123"}},
			[]check{header("Knative-Serving-Tag", "blue"), header("Knative-Serving-Default-Route", "false"), header("X-Request-Id", "abc-123")}},
		{"no User-Agent of the gate's own is added", "h", "", nil,
			[]check{func(t *testing.T, got seenRequest) {
				if v := got.header.Get("User-Agent"); v != "" {
					t.Errorf("User-Agent = %q, want none", v)
				}
			}}},
		{"hop-by-hop headers stop at the gate", "h", "",
			http.Header{"Connection": {"X-Hop"}, "X-Hop": {"1"}, "Keep-Alive": {"timeout=5"}},
			[]check{absent("X-Hop"), absent("Keep-Alive")}},
	} {
		for _, client := range []struct {
			proto string
			c     *http.Client
		}{{"HTTP/1.1", tg.client}, {"h2c", h2c}} {
			if _, hop := tc.header["Connection"]; hop && client.proto != "HTTP/1.1" {
				// HTTP/2 forbids connection-specific headers.
				continue
			}
			t.Run(tc.name+" ("+client.proto+")", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), testWait)
				defer cancel()
				url := tg.url("/path")
				if tc.query != "" {
					url += "?" + tc.query
				}
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Host = tc.host
				req.Header.Set("User-Agent", "") // none: as a client that sends none
				for k, v := range tc.header {
					req.Header[k] = v
				}
				resp, err := client.c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d", resp.StatusCode)
				}
				got := up.seen()
				for _, c := range tc.checks {
					c(t, got)
				}
			})
		}
	}
}

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
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rawUpstream accepts connections on 127.0.0.1 and gives each to serve;
// it counts the connections.
type rawUpstream struct {
	ln    net.Listener
	conns atomic.Int32
	wg    sync.WaitGroup
}

func startRawUpstream(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) *rawUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &rawUpstream{ln: ln}
	var mu sync.Mutex
	var open []net.Conn
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.conns.Add(1)
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			u.wg.Add(1)
			go func() {
				defer u.wg.Done()
				defer c.Close()
				serve(c, bufio.NewReader(c))
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		u.wg.Wait()
	})
	return u
}

// answerOK answers every request on the connection with "ok", at most n
// of them (0: any number), then closes it without saying so.
func answerOK(n int) func(net.Conn, *bufio.Reader) {
	return func(c net.Conn, br *bufio.Reader) {
		for i := 0; n == 0 || i < n; i++ {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
				return
			}
		}
	}
}

func newTestClient(t *testing.T, addr string, fallback http.RoundTripper) *Client {
	d := &net.Dialer{}
	h := &Client{Dial: d.DialContext, Addr: addr, Fallback: fallback, IdleTimeout: time.Minute, MaxIdle: 8}
	t.Cleanup(h.Close)
	return h
}

func mustRequest(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func getBody(t *testing.T, rt http.RoundTripper, req *http.Request) string {
	t.Helper()
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Status + " " + string(b)
}

func TestH1Client(t *testing.T) {
	for _, tc := range []struct {
		name      string
		perConn   int // requests the upstream answers per connection (0: any)
		requests  int
		wantConns int32
	}{
		{"requests one after another share one kept-alive connection", 0, 5, 1},
		{"a connection the container closed while idle is replaced and the request answered", 1, 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := startRawUpstream(t, answerOK(tc.perConn))
			h := newTestClient(t, u.ln.Addr().String(), nil)
			for range tc.requests {
				if got := getBody(t, h, mustRequest(t, "http://"+u.ln.Addr().String()+"/")); got != "200 OK ok" {
					t.Fatalf("answer %q", got)
				}
			}
			if got := u.conns.Load(); got != tc.wantConns {
				t.Errorf("%d connections, want %d", got, tc.wantConns)
			}
		})
	}
}

func TestH1ClientBodyClosedEarlyClosesTheConnection(t *testing.T) {
	u := startRawUpstream(t, answerOK(0))
	h := newTestClient(t, u.ln.Addr().String(), nil)
	resp, err := h.RoundTrip(mustRequest(t, "http://"+u.ln.Addr().String()+"/"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // unread: the connection cannot carry another request
	if got := getBody(t, h, mustRequest(t, "http://"+u.ln.Addr().String()+"/")); got != "200 OK ok" {
		t.Fatalf("answer %q", got)
	}
	if got := u.conns.Load(); got != 2 {
		t.Errorf("%d connections, want 2", got)
	}
}

func TestH1ClientPassesInformationalAnswersToTheTrace(t *testing.T) {
	u := startRawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err == nil {
			_, _ = io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	h := newTestClient(t, u.ln.Addr().String(), nil)
	var got []string
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, hdr textproto.MIMEHeader) error {
		got = append(got, http.StatusText(code)+" "+hdr.Get("Link"))
		return nil
	}}
	req := mustRequest(t, "http://"+u.ln.Addr().String()+"/")
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	if body := getBody(t, h, req); body != "200 OK ok" {
		t.Fatalf("answer %q", body)
	}
	if len(got) != 1 || got[0] != "Early Hints </a.css>" {
		t.Errorf("1xx answers seen: %q", got)
	}
}

func TestH1ClientRequestEndAbortsTheWait(t *testing.T) {
	never := make(chan struct{})
	u := startRawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		_, _ = http.ReadRequest(br)
		select {
		case <-never:
		case <-time.After(10 * time.Second):
		}
	})
	defer close(never)
	h := newTestClient(t, u.ln.Addr().String(), nil)
	cause := errors.New("the request's limit")
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(20*time.Millisecond, func() { cancel(cause) })
	start := time.Now()
	_, err := h.RoundTrip(mustRequest(t, "http://"+u.ln.Addr().String()+"/").WithContext(ctx))
	if !errors.Is(err, cause) {
		t.Errorf("error %v, want the context's cause", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("returned after %s", d)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestH1ClientLeavesOtherRequestsToTheTransport(t *testing.T) {
	sentinel := errors.New("fallback")
	fallback := roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, sentinel })
	h := newTestClient(t, "127.0.0.1:1", fallback)
	post := mustRequest(t, "http://127.0.0.1:1/")
	post.Method = http.MethodPost
	upgrade := mustRequest(t, "http://127.0.0.1:1/")
	upgrade.Header.Set("Connection", "Upgrade")
	upgrade.Header.Set("Upgrade", "websocket")
	body, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/", io.NopCloser(io.LimitReader(nil, 0)))
	for name, req := range map[string]*http.Request{"a POST": post, "an upgrade": upgrade, "a GET with a body": body} {
		if _, err := h.RoundTrip(req); !errors.Is(err, sentinel) {
			t.Errorf("%s: %v, want the transport's answer", name, err)
		}
	}
}

// TestWriteRequestIsRequestWrite pins the fast path's request bytes to
// net/http's for the requests it writes itself.
func TestWriteRequestIsRequestWrite(t *testing.T) {
	for _, tc := range []struct {
		name, method, url, host string
		header                  http.Header
	}{
		{"a GET with no header", "GET", "http://10.0.0.1:8080/", "", nil},
		{"a HEAD with a query and the client's Host", "HEAD", "http://10.0.0.1:8080/a/b?x=1&y=%20", "example.com", nil},
		{"an OPTIONS", "OPTIONS", "http://10.0.0.1:8080/*", "h", nil},
		{"a POST with an Idempotency-Key says Content-Length 0", "POST", "http://10.0.0.1:8080/", "h", http.Header{"Idempotency-Key": {"k"}}},
		{"a DELETE with an Idempotency-Key", "DELETE", "http://[::1]:8080/r", "[::1]:8080", http.Header{"Idempotency-Key": {"k"}}},
		{"headers sorted, repeated values kept, values trimmed", "GET", "http://127.0.0.1/", "h", http.Header{
			"X-B": {"2", " 3 "}, "Accept": {"*/*"}, "X-A": {"a\r\nb"}, "User-Agent": {"curl/8"}}},
		{"an empty User-Agent sends none", "GET", "http://127.0.0.1/", "h", http.Header{"User-Agent": {""}}},
		{"a User-Agent with a newline", "GET", "http://127.0.0.1/", "h", http.Header{"User-Agent": {"a\nb "}}},
		{"a User-Agent of blanks is sent empty", "GET", "http://127.0.0.1/", "h", http.Header{"User-Agent": {"  "}}},
		{"an invalid header name is dropped", "GET", "http://127.0.0.1/", "h", http.Header{"Bad Name": {"x"}, "Ok": {"y"}}},
		{"a host with a zone goes to Request.Write", "GET", "http://[fe80::1%25eth0]:80/", "", nil},
		{"a non-ASCII host goes to Request.Write", "GET", "http://127.0.0.1/", "bücher.example", nil},
		{"an escaped path", "GET", "http://127.0.0.1/a%2Fb/c%20d", "h", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mk := func() *http.Request {
				req, err := http.NewRequest(tc.method, tc.url, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Host = tc.host
				if tc.header != nil {
					req.Header = tc.header.Clone()
				}
				return req
			}
			var want, got strings.Builder
			if err := mk().Write(&want); err != nil {
				t.Fatal(err)
			}
			bw := bufio.NewWriter(&got)
			if err := writeRequest(bw, mk()); err != nil {
				t.Fatal(err)
			}
			bw.Flush()
			if got.String() != want.String() {
				t.Errorf("wrote\n%q\nRequest.Write writes\n%q", got.String(), want.String())
			}
		})
	}
}

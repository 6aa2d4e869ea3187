package h1

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"sync/atomic"
	"testing"
	"time"
)

// TestH1ClientSendsAgainOnlyWhenNoByteOfTheAnswerCame pins when a failed
// request goes out once more: on a kept-alive connection that failed
// before the answer began, never on a fresh one, never once the answer
// began (its first byte may have been the server's work).
func TestH1ClientSendsAgainOnlyWhenNoByteOfTheAnswerCame(t *testing.T) {
	for _, tc := range []struct {
		name string
		// second is what the server does with the second request on the
		// first connection; every later connection answers "ok".
		second    string
		wantErr   bool
		wantConns int32
	}{
		{"closed before the answer: sent again on a fresh connection", "", false, 2},
		{"cut after the answer began: the error is the answer", "HTTP/1.1 200 OK\r\nContent-Le", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var accepted atomic.Int32
			u := startRawUpstream(t, func(c net.Conn, br *bufio.Reader) {
				if accepted.Add(1) > 1 {
					answerOK(0)(c, br)
					return
				}
				answerOK(1)(c, br)
				if _, err := http.ReadRequest(br); err == nil {
					_, _ = io.WriteString(c, tc.second)
				}
			})
			h := newTestClient(t, u.ln.Addr().String(), nil)
			if got := getBody(t, h, mustRequest(t, "http://"+u.ln.Addr().String()+"/")); got != "200 OK ok" {
				t.Fatalf("first answer %q", got)
			}
			resp, err := h.RoundTrip(mustRequest(t, "http://"+u.ln.Addr().String()+"/"))
			if err == nil {
				resp.Body.Close()
			}
			if (err != nil) != tc.wantErr {
				t.Errorf("second request: error %v, want an error: %v", err, tc.wantErr)
			}
			if got := u.conns.Load(); got != tc.wantConns {
				t.Errorf("%d connections, want %d", got, tc.wantConns)
			}
		})
	}
}

func TestH1ClientFreshConnectionFailureIsTheAnswer(t *testing.T) {
	u := startRawUpstream(t, func(c net.Conn, br *bufio.Reader) { _, _ = http.ReadRequest(br) })
	h := newTestClient(t, u.ln.Addr().String(), nil)
	if _, err := h.RoundTrip(mustRequest(t, "http://"+u.ln.Addr().String()+"/")); err == nil {
		t.Fatal("no error from a server that closes unanswered")
	}
	if got := u.conns.Load(); got != 1 {
		t.Errorf("%d connections, want 1: a fresh connection's failure is not retried", got)
	}
}

func TestH1ClientInformationalComesBeforeTheTrace(t *testing.T) {
	for _, tc := range []struct {
		name      string
		takes     bool
		wantTrace int
	}{
		{"taken by Informational: the trace sees none", true, 0},
		{"declined by Informational: the trace gets it", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := startRawUpstream(t, func(c net.Conn, br *bufio.Reader) {
				if _, err := http.ReadRequest(br); err == nil {
					_, _ = io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			})
			h := newTestClient(t, u.ln.Addr().String(), nil)
			var offered []string
			h.Informational = func(_ *http.Request, code int, hdr http.Header) bool {
				offered = append(offered, http.StatusText(code)+" "+hdr.Get("Link"))
				return tc.takes
			}
			traced := 0
			trace := &httptrace.ClientTrace{Got1xxResponse: func(int, textproto.MIMEHeader) error { traced++; return nil }}
			req := mustRequest(t, "http://"+u.ln.Addr().String()+"/")
			req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
			if body := getBody(t, h, req); body != "200 OK ok" {
				t.Fatalf("answer %q", body)
			}
			if len(offered) != 1 || offered[0] != "Early Hints </a.css>" {
				t.Errorf("offered %q", offered)
			}
			if traced != tc.wantTrace {
				t.Errorf("trace saw %d 1xx answers, want %d", traced, tc.wantTrace)
			}
		})
	}
}

// closeWatch answers every request with "ok" and reports on closed when
// the client closes the connection.
func closeWatch(closed chan<- struct{}) func(net.Conn, *bufio.Reader) {
	return func(c net.Conn, br *bufio.Reader) {
		answerOK(0)(c, br)
		closed <- struct{}{}
	}
}

func waitClosed(t *testing.T, closed <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the server saw no close in 10 s", what)
	}
}

// TestH1ClientCloseClosesIdleNowAndBusyAtTheirEnd pins Close, what a
// proxy calls when the server is gone for good: the idle connection is
// closed at once, the one in use once its answer was read, and a later
// request still gets its answer without a connection being kept.
func TestH1ClientCloseClosesIdleNowAndBusyAtTheirEnd(t *testing.T) {
	closed := make(chan struct{}, 4)
	u := startRawUpstream(t, closeWatch(closed))
	h := newTestClient(t, u.ln.Addr().String(), nil)
	url := "http://" + u.ln.Addr().String() + "/"
	busy, err := h.RoundTrip(mustRequest(t, url)) // its body unread: in use
	if err != nil {
		t.Fatal(err)
	}
	if got := getBody(t, h, mustRequest(t, url)); got != "200 OK ok" { // then idle
		t.Fatalf("answer %q", got)
	}
	h.Close()
	waitClosed(t, closed, "the idle connection at Close")
	if b, err := io.ReadAll(busy.Body); err != nil || string(b) != "ok" {
		t.Fatalf("the busy connection's answer: %q, %v", b, err)
	}
	busy.Body.Close()
	waitClosed(t, closed, "the busy connection at its request's end")
	if got := getBody(t, h, mustRequest(t, url)); got != "200 OK ok" {
		t.Fatalf("after Close: answer %q", got)
	}
	waitClosed(t, closed, "a connection opened after Close")
	if got := u.conns.Load(); got != 3 {
		t.Errorf("%d connections, want 3", got)
	}
}

type closeCounter struct {
	http.RoundTripper
	closes int
}

func (c *closeCounter) CloseIdleConnections() { c.closes++ }

// TestH1ClientCloseIdleConnectionsKeepsTheFallbacks pins that a Fallback
// shared by many Clients (the front door's, one Client per gate) is not
// emptied when one of them drops its idle connections; its own are.
func TestH1ClientCloseIdleConnectionsKeepsTheFallbacks(t *testing.T) {
	closed := make(chan struct{}, 1)
	u := startRawUpstream(t, closeWatch(closed))
	fallback := &closeCounter{RoundTripper: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("unused") })}
	h := newTestClient(t, u.ln.Addr().String(), fallback)
	if got := getBody(t, h, mustRequest(t, "http://"+u.ln.Addr().String()+"/")); got != "200 OK ok" {
		t.Fatalf("answer %q", got)
	}
	h.CloseIdleConnections()
	waitClosed(t, closed, "the idle connection")
	if fallback.closes != 0 {
		t.Errorf("the fallback's idle connections were closed %d times", fallback.closes)
	}
}

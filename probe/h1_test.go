package probe

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// transportRunner sends every probe through the shared http.Transport, as
// the prober did before plainHTTP: the reference plainHTTP must equal.
var transportRunner = func() *Runner {
	r := NewRunner()
	r.transportOnly = true
	return r
}()

// scriptServer accepts connections on loopback, reads each request's head
// and hands the connection to a script: the answers net/http's server
// would never give (no answer, a cut, a 1xx first).
type scriptServer struct {
	l     net.Listener
	quit  chan struct{}
	wg    sync.WaitGroup
	heads chan []byte
}

// newScriptServer serves script on every connection; script gets the
// request head as it came off the wire and returns when done or when
// quit closes (the test's end).
func newScriptServer(t *testing.T, script func(c net.Conn, head []byte, quit <-chan struct{})) *scriptServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scriptServer{l: l, quit: make(chan struct{}), heads: make(chan []byte, 16)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer func() { _ = c.Close() }()
				head, err := readHead(bufio.NewReader(c))
				if err != nil {
					return
				}
				select {
				case s.heads <- head:
				default:
				}
				script(c, head, s.quit)
			}()
		}
	}()
	t.Cleanup(func() { close(s.quit); _ = l.Close(); s.wg.Wait() })
	return s
}

func (s *scriptServer) port() int { return s.l.Addr().(*net.TCPAddr).Port }

// readHead reads a request head, its final blank line included.
func readHead(br *bufio.Reader) ([]byte, error) {
	var head []byte
	for {
		line, err := br.ReadBytes('\n')
		head = append(head, line...)
		if err != nil {
			return head, err
		}
		if string(line) == "\r\n" {
			return head, nil
		}
	}
}

// answer returns a script that writes raw and then closes.
func answer(raw string) func(net.Conn, []byte, <-chan struct{}) {
	return func(c net.Conn, _ []byte, _ <-chan struct{}) { _, _ = io.WriteString(c, raw) }
}

// hold returns a script that writes raw and then keeps the connection
// open until the test ends.
func hold(raw string) func(net.Conn, []byte, <-chan struct{}) {
	return func(c net.Conn, _ []byte, quit <-chan struct{}) {
		_, _ = io.WriteString(c, raw)
		<-quit
	}
}

// TestPlainHTTPWritesWhatTheTransportWrites: the bytes plainHTTP puts on
// the wire are, byte for byte, those of the Transport with keep-alives
// off, for the kubelet's request shapes; those it leaves to the Transport
// are the Transport's by construction.
func TestPlainHTTPWritesWhatTheTransportWrites(t *testing.T) {
	h := func(kv ...string) []corev1.HTTPHeader {
		var hs []corev1.HTTPHeader
		for i := 0; i < len(kv); i += 2 {
			hs = append(hs, corev1.HTTPHeader{Name: kv[i], Value: kv[i+1]})
		}
		return hs
	}
	for _, tc := range []struct {
		name    string
		path    string
		headers []corev1.HTTPHeader
		itself  bool // plainHTTP writes it (else the Transport does)
	}{
		{"default headers", "/healthz", nil, true},
		{"custom headers, repeats and case", "/", h("X-Check", "a", "x-check", "b", "Accept", "text/plain", "Accept", "", "K-Network-Probe", "queue"), true},
		{"a user User-Agent", "/", h("User-Agent", " mine/1\t", "User-Agent", "second"), true},
		{"an empty User-Agent sends none", "/", h("User-Agent", ""), true},
		{"a blank User-Agent is sent empty", "/", h("User-Agent", "  "), true},
		{"an empty first Accept sends none", "/", h("Accept", "", "Accept", "x"), true},
		{"a custom Host header", "/", h("Host", "app.example.test"), true},
		{"a user Accept-Encoding", "/", h("Accept-Encoding", "gzip"), true},
		{"a path with a query", "/healthz?full=1&x=%20y", nil, true},
		{"a path without leading slash", "healthz", nil, true},
		{"a path that does not parse is sent escaped", "/%zz?a=b", nil, true},
		{"a user Connection header goes to the Transport", "/", h("Connection", "keep-alive"), false},
		{"a Host the Transport drops goes to the Transport", "/", h("Host", "bad host"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScriptServer(t, answer("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
			p := httpGetProbe(intstr.FromInt32(int32(s.port())), tc.path)
			p.HTTPGet.HTTPHeaders = tc.headers
			tg := Target{PodIP: "127.0.0.1"}
			req, err := runner.newHTTPRequest(context.Background(), p.HTTPGet, tg)
			if err != nil {
				t.Fatal(err)
			}
			if _, itself := writesItself(req); itself != tc.itself {
				t.Fatalf("plainHTTP writes it itself: %v, want %v", itself, tc.itself)
			}
			var sent [2][]byte
			for i, r := range []*Runner{transportRunner, runner} {
				if o := r.Run(context.Background(), p, tg); o.Result != Success {
					t.Fatalf("result = %v (%s), want success", o.Result, o.Message)
				}
				sent[i] = <-s.heads
			}
			if !bytes.Equal(sent[0], sent[1]) {
				t.Errorf("plainHTTP sent:\n%q\nthe Transport sent:\n%q", sent[1], sent[0])
			}
		})
	}
}

// TestPlainHTTPOutcomeIsTheTransports: every answer, broken answer and
// missing answer gives the same verdict, message, status code, error and
// attempts through plainHTTP as through the Transport.
func TestPlainHTTPOutcomeIsTheTransports(t *testing.T) {
	rd := &redirector{}
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var code int
		if _, err := fmt.Sscanf(r.URL.Path, "/%d", &code); err == nil {
			w.WriteHeader(code)
			_, _ = fmt.Fprintf(w, "body of %d", code)
			return
		}
		switch r.URL.Path {
		case "/big":
			_, _ = io.WriteString(w, strings.Repeat("a", 3*MaxHTTPBody))
		case "/big-warning":
			w.WriteHeader(http.StatusMultipleChoices)
			_, _ = io.WriteString(w, strings.Repeat("b", 3*MaxHTTPBody))
		default:
			rd.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(web.Close)
	_, port := hostPort(t, web.URL)
	secure := httptest.NewTLSServer(rd)
	t.Cleanup(secure.Close)
	_, securePort := hostPort(t, secure.URL)

	type scenario struct {
		name    string
		want    Result // the same through both, pinned
		port    int
		path    string
		timeout int32
		headers []corev1.HTTPHeader
		// callerDeadline, when set, ends the caller's context first.
		callerDeadline time.Duration
	}
	on := func(name string, want Result, script func(net.Conn, []byte, <-chan struct{})) scenario {
		return scenario{name: name, want: want, port: newScriptServer(t, script).port(), path: "/", timeout: 1}
	}
	tests := []scenario{
		{name: "200 is a success", want: Success, port: port, path: "/200"},
		{name: "500 is a failure", want: Failure, port: port, path: "/500"},
		{name: "a 3xx without Location is a warning with its body", want: Warning, port: port, path: "/302"},
		{name: "a 3xx to the same host is followed", want: Success, port: port, path: "/r/3"},
		{name: "a 3xx to another host is a warning with its body", want: Warning, port: port, path: fmt.Sprintf("/to?u=http://localhost:%d/r/0", port)},
		{name: "a 3xx to https on the same host is followed", want: Success, port: port, path: fmt.Sprintf("/to?u=https://127.0.0.1:%d/r/0", securePort)},
		{name: "the tenth redirect fails", want: Failure, port: port, path: "/r/10"},
		{name: "a body over 10 KiB is cut, not an error", want: Success, port: port, path: "/big"},
		{name: "a warning quotes 10 KiB of body", want: Warning, port: port, path: "/big-warning"},
		{name: "a user Connection header (sent by the Transport)", want: Success, port: port, path: "/200",
			headers: []corev1.HTTPHeader{{Name: "Connection", Value: "keep-alive"}}},
		{name: "a refused connection is a failure", want: Failure, port: freePort(t), path: "/"},
		on("no answer in time is a failure with the Client's timeout text", Failure, hold("")),
		on("half the headers, then nothing, times out", Failure, hold("HTTP/1.1 200 OK\r\nContent-Le")),
		on("a connection closed mid-headers is a failure", Failure, answer("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n")),
		on("a connection closed mid-header-line is a failure", Failure, answer("HTTP/1.1 200 OK\r\nContent-Le")),
		on("a connection closed without an answer is a failure", Failure, answer("")),
		on("a malformed answer is a failure", Failure, answer("garbage\r\n\r\n")),
		on("a body cut short is an error", Error, answer("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")),
		on("a body still arriving at the timeout is an error", Error, hold("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")),
		on("a broken chunked body is an error", Error, answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")),
		on("a chunked body is read", Warning, answer("HTTP/1.1 302 Found\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n")),
		on("a body delimited by the close is read", Warning, answer("HTTP/1.1 399 Odd\r\n\r\nuntil the end")),
		on("1xx answers before the answer are skipped", Success, answer("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n")),
		on("a 101 answer is a failure", Failure, answer("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\nbye")),
	}
	callerEnds := on("a caller's context ending first is a discarded error, without the Client's words", Error, hold(""))
	callerEnds.callerDeadline = 200 * time.Millisecond
	tests = append(tests, callerEnds)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := httpGetProbe(intstr.FromInt32(int32(tc.port)), tc.path)
			p.HTTPGet.HTTPHeaders = tc.headers
			if tc.timeout != 0 {
				p.TimeoutSeconds = tc.timeout
			}
			tg := Target{PodIP: "127.0.0.1"}
			outcome := func(r *Runner) Outcome {
				ctx := context.Background()
				if tc.callerDeadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.callerDeadline)
					defer cancel()
				}
				return r.Run(ctx, p, tg)
			}
			want, got := outcome(transportRunner), outcome(runner)
			if !sameOutcome(got, want) {
				t.Errorf("plainHTTP: %v %q code %d err %v after %d attempts\nTransport: %v %q code %d err %v after %d attempts",
					got.Result, got.Message, got.StatusCode, got.Err, got.Attempts,
					want.Result, want.Message, want.StatusCode, want.Err, want.Attempts)
			}
			if got.Result != tc.want {
				t.Errorf("result %v (%q), want %v", got.Result, got.Message, tc.want)
			}
		})
	}
}

// sameOutcome compares what a probe reports: result, message, status
// code, error (its text and whether it is a deadline) and attempts.
func sameOutcome(a, b Outcome) bool {
	if (a.Err == nil) != (b.Err == nil) {
		return false
	}
	if a.Err != nil && (a.Err.Error() != b.Err.Error() ||
		errors.Is(a.Err, context.DeadlineExceeded) != errors.Is(b.Err, context.DeadlineExceeded)) {
		return false
	}
	return a.Result == b.Result && a.Message == b.Message && a.StatusCode == b.StatusCode && a.Attempts == b.Attempts
}

// TestPlainHTTPEndsA101ThatHoldsTheConnection pins the one place where
// plainHTTP deliberately differs from the Transport (and so from the
// kubelet): after a 101 answer the Transport hands the raw connection
// over as the body and no deadline applies to it any more, so a container
// that answers 101 and keeps the connection open hangs the probe for
// good. plainHTTP keeps the attempt's deadline: the body read times out,
// a probe error (retried, then dropped).
func TestPlainHTTPEndsA101ThatHoldsTheConnection(t *testing.T) {
	t.Parallel()
	s := newScriptServer(t, hold("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\nbye"))
	p := withTimeout(httpGetProbe(intstr.FromInt32(int32(s.port())), "/"), 1)
	o := runner.Attempt(context.Background(), p, Target{PodIP: "127.0.0.1"}, 0)
	const want = "context deadline exceeded (Client.Timeout or context cancellation while reading body)"
	if o.Result != Error || o.Err == nil || o.Err.Error() != want || o.StatusCode != http.StatusSwitchingProtocols {
		t.Errorf("got %v %q (code %d), want an error %q", o.Result, o.Message, o.StatusCode, want)
	}
}

package gate

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/test/testapp"
)

func h2cClient() *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: &p}}
}

// TestRideThroughHoldsUntilTheContainerIsBack: the serving container is
// down (its port refuses); a request is held, the gate turns unready at
// once, and the request is answered by the restarted container.
func TestRideThroughHoldsUntilTheContainerIsBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client func() *http.Client
	}{
		{"HTTP/1.1", func() *http.Client { return &http.Client{Transport: &http.Transport{}} }},
		// An HTTP/2 request goes to the container as h2c, as queue-proxy
		// sends it: such a container speaks h2c.
		{"h2c", h2cClient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first := startNamedUpstream(t, "127.0.0.1:0", "first")
			addr := first.addr
			cfg := gateConfig(t, addr)
			tg := startGate(t, cfg, Options{})
			tg.waitReady(t, true)
			client := tc.client()
			defer client.Transport.(*http.Transport).CloseIdleConnections()

			first.stop(t)
			type result struct {
				code int
				body string
				err  error
			}
			res := make(chan result, 1)
			go func() {
				resp, err := client.Get(tg.url("/held"))
				if err != nil {
					res <- result{err: err}
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				res <- result{code: resp.StatusCode, body: string(b)}
			}()
			eventually(t, "the request is held", func() bool {
				return strings.Contains(tg.metricsText(t), "podgate_ridethrough_held 1")
			})
			tg.waitReady(t, false)
			contains(t, "verbose readyz", tg.verbose(t), "[-]user-container failed: refused the proxy's connection: dial tcp "+addr)
			startNamedUpstream(t, addr, "second")
			r := <-res
			if r.err != nil || r.code != http.StatusOK || r.body != "second "+strings.Split(tc.name, "/")[0]+"/"+protoVersion(tc.name) {
				t.Fatalf("held request: %d %q %v, want 200 from the restarted container", r.code, r.body, r.err)
			}
			tg.waitReady(t, true)
			m := tg.metricsText(t)
			contains(t, "metrics", m, "podgate_ridethrough_holds_total 1")
			contains(t, "metrics", m, `podgate_requests_total{code="200"} 1`)
		})
	}
}

func protoVersion(name string) string {
	if name == "h2c" {
		return "2.0"
	}
	return "1.1"
}

// namedUpstream is a container that answers "<name> <proto>", speaking
// HTTP/1.1 and h2c.
type namedUpstream struct {
	addr string
	srv  *http.Server
	done chan struct{}
}

func startNamedUpstream(t testing.TB, addr, name string) *namedUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	u := &namedUpstream{addr: ln.Addr().String(), done: make(chan struct{}), srv: &http.Server{
		Protocols: &protos,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			proto := r.Proto
			if proto == "HTTP/2.0" {
				proto = "h2c/2.0"
			}
			fmt.Fprintf(w, "%s %s", name, proto)
		}),
	}}
	go func() {
		defer close(u.done)
		_ = u.srv.Serve(ln)
	}()
	t.Cleanup(func() { u.stop(t) })
	return u
}

// stop shuts the container down gracefully, as on SIGTERM.
func (u *namedUpstream) stop(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	_ = u.srv.Shutdown(ctx)
	<-u.done
}

func TestRideThroughHeldRequestTimesOut(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	app := startApp(t, testapp.Config{})
	cfg := gateConfig(t, app.Addr())
	cfg.RevisionTimeout = 10 * time.Second
	tg := startGate(t, cfg, Options{Clock: clk})
	stopApp(t, app)
	res := make(chan string, 1)
	go func() {
		resp, err := tg.client.Get(tg.url("/held"))
		if err != nil {
			res <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		res <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()
	eventually(t, "the request is held", func() bool {
		return strings.Contains(tg.metricsText(t), "podgate_ridethrough_held 1")
	})
	clk.Step(10 * time.Second)
	if got := <-res; got != "504 request timeout" {
		t.Errorf("held request after the timeout: %q, want 504 request timeout", got)
	}
}

// oneShotUpstream accepts one connection on addr, reads one whole request
// from it and closes it without answering: a container that died with the
// request inside. It returns the request it read.
func oneShotUpstream(t *testing.T, ln net.Listener) <-chan string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		ln.Close()
		if err != nil {
			got <- "accept: " + err.Error()
			return
		}
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			c.Close()
			got <- "read: " + err.Error()
			return
		}
		body, _ := io.ReadAll(req.Body)
		c.Close() // dies with the request inside, before answering
		got <- req.Method + " " + req.URL.Path + " " + string(body)
	}()
	return got
}

// TestRequestThatDiedInTheContainer: the container read the request, then
// died without a byte of answer; it restarts on the same port. An
// idempotent request (by Go's transport's rule) is sent again and answered
// by the restarted container; any other gets a 502, and the restarted
// container never sees it.
func TestRequestThatDiedInTheContainer(t *testing.T) {
	for _, tc := range []struct {
		name, method, body string
		header             http.Header
		resent             bool
	}{
		{"POST is not sent again", http.MethodPost, "pay 100 EUR", nil, false},
		{"PUT is not sent again", http.MethodPut, "x", nil, false},
		{"GET is sent again", http.MethodGet, "", nil, true},
		{"HEAD is sent again", http.MethodHead, "", nil, true},
		{"OPTIONS is sent again", http.MethodOptions, "", nil, true},
		{"GET with a body is sent again", http.MethodGet, "query", nil, true},
		{"POST with an Idempotency-Key is sent again, body and all", http.MethodPost, "pay 100 EUR", http.Header{"Idempotency-Key": {"k1"}}, true},
		{"POST with an X-Idempotency-Key is sent again", http.MethodPost, "pay 100 EUR", http.Header{"X-Idempotency-Key": {"k2"}}, true},
		{"POST with a body too large to replay is not sent again", http.MethodPost, strings.Repeat("x", 128<<10), http.Header{"Idempotency-Key": {"k3"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			first := oneShotUpstream(t, ln)
			tg := startGate(t, gateConfig(t, addr), Options{})

			res := make(chan string, 1)
			go func() {
				var body io.Reader
				if tc.body != "" {
					body = strings.NewReader(tc.body)
				}
				req, _ := http.NewRequest(tc.method, tg.url("/charge"), body)
				for k, v := range tc.header {
					req.Header[k] = v
				}
				resp, err := tg.client.Do(req)
				if err != nil {
					res <- err.Error()
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				res <- fmt.Sprintf("%d %s", resp.StatusCode, b)
			}()
			if got, want := <-first, strings.TrimSpace(tc.method+" /charge "+tc.body); strings.TrimSpace(got) != want {
				t.Fatalf("the first container read %.60q, want %.60q", got, want)
			}
			// The container restarts on the same port, counting what it gets.
			var seen atomic.Int64
			var gotBody atomic.Value
			startUpstreamAt(t, addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen.Add(1)
				b, _ := io.ReadAll(r.Body)
				if r.URL.Path == "/charge" {
					gotBody.Store(string(b))
				}
				fmt.Fprint(w, "second")
			}))
			got := <-res
			want := 1
			if tc.resent {
				want = 2
				wantAnswer := "200 second"
				if tc.method == http.MethodHead {
					wantAnswer = "200 "
				}
				if got != wantAnswer {
					t.Errorf("client got %.80q, want %q from the restarted container", got, wantAnswer)
				}
				if b, _ := gotBody.Load().(string); b != tc.body {
					t.Errorf("the restarted container got the body %.60q, want %.60q", b, tc.body)
				}
			} else if !strings.HasPrefix(got, "502 ") || !strings.HasSuffix(got, "\n") {
				// queue-proxy's answer: the error as http.Error writes it.
				t.Errorf("client got %q, want a 502 with the error and a newline", got)
			}
			// A later request does reach the restarted container.
			if code, body, _ := tg.do(t, http.MethodGet, tg.url("/later"), nil, nil); code != 200 || body != "second" {
				t.Errorf("later request: %d %q", code, body)
			}
			if n := seen.Load(); n != int64(want) {
				t.Errorf("the restarted container got %d requests, want %d", n, want)
			}
			if !tc.resent {
				contains(t, "metrics", tg.metricsText(t), "podgate_upstream_errors_total 1")
			}
		})
	}
}

// startUpstreamAt serves h on addr until the test ends.
func startUpstreamAt(t testing.TB, addr string, h http.Handler) *http.Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return srv
}

// load sends GETs from n goroutines until stop is closed and counts
// the outcomes.
type load struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	failures   []string
	wg         sync.WaitGroup
	stop       chan struct{}
}

func startLoad(n int, client *http.Client, url string) *load {
	l := &load{stop: make(chan struct{})}
	for i := 0; i < n; i++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				resp, err := client.Get(url)
				if err != nil {
					l.fail(err.Error())
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					l.fail(fmt.Sprintf("%d %s", resp.StatusCode, b))
					continue
				}
				l.ok.Add(1)
			}
		}()
	}
	return l
}

func (l *load) fail(msg string) {
	l.failed.Add(1)
	l.mu.Lock()
	if len(l.failures) < 10 {
		l.failures = append(l.failures, msg)
	}
	l.mu.Unlock()
}

func (l *load) finish(t testing.TB) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	if n := l.failed.Load(); n > 0 {
		t.Errorf("%d of %d requests failed, e.g. %q", n, n+l.ok.Load(), l.failures)
	}
}

// waitOK waits until the load has n more successes than now.
func (l *load) waitOK(t testing.TB, n int64) {
	t.Helper()
	target := l.ok.Load() + n
	eventually(t, fmt.Sprintf("%d more successful requests", n), func() bool { return l.ok.Load() >= target })
}

// TestRestartUnderLoadLosesNothing restarts the serving container while 16
// clients keep sending: not one of them sees an error.
func TestRestartUnderLoadLosesNothing(t *testing.T) {
	app := startApp(t, testapp.Config{Name: "first"})
	addr := app.Addr()
	tg := startGate(t, gateConfig(t, addr), Options{})
	tg.waitReady(t, true)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.Transport.(*http.Transport).CloseIdleConnections()

	l := startLoad(16, client, tg.url("/"))
	l.waitOK(t, 200)
	for round := 0; round < 3; round++ {
		stopApp(t, app)
		eventually(t, "requests are held", func() bool {
			return !strings.Contains(tg.metricsText(t), "podgate_ridethrough_held 0")
		})
		app = startApp(t, testapp.Config{Name: fmt.Sprintf("restart-%d", round), Addr: addr})
		l.waitOK(t, 200)
	}
	l.finish(t)
	m := tg.metricsText(t)
	contains(t, "metrics", m, "podgate_upstream_errors_total 0")
	if strings.Contains(m, "podgate_ridethrough_holds_total 0\n") {
		t.Error("no request was held: the restarts did not happen under load")
	}
	t.Logf("%d requests, %s", l.ok.Load(), strings.TrimSpace(grepLine(m, "podgate_ridethrough_holds_total ")))
}

func grepLine(text, prefix string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	return ""
}

// TestARequestThatKillsTheContainerIsSentAgainOnlyOnce: every time the
// container reads the GET it dies unanswered (a request that crashes it).
// The gate sends it again once, then answers 502: it does not crash the
// container in a loop.
func TestARequestThatKillsTheContainerIsSentAgainOnlyOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
				reads.Add(1)
			}
			c.Close()
		}
	}()
	defer func() {
		ln.Close()
		<-done
	}()
	tg := startGate(t, gateConfig(t, ln.Addr().String()), Options{})
	code, body, _ := tg.do(t, http.MethodGet, tg.url("/crash"), nil, nil)
	if code != http.StatusBadGateway || !strings.HasSuffix(body, "\n") {
		t.Errorf("got %d %q, want a 502 with the error", code, body)
	}
	if n := reads.Load(); n != 2 {
		t.Errorf("the container read the request %d times, want 2 (sent again once)", n)
	}
}

// resetUnread waits for the request's first byte, so that the gate has
// sent it, and closes c with a reset (SO_LINGER 0), the rest unread: what
// the gate sees of a connection in a closing listener's backlog.
func resetUnread(t *testing.T, c net.Conn) {
	if _, err := c.Read(make([]byte, 1)); err != nil {
		t.Error(err)
	}
	if err := c.(*net.TCPConn).SetLinger(0); err != nil {
		t.Error(err)
	}
	c.Close()
}

// TestAResendIntoADyingContainersBacklogIsNotASecondDeath: the container
// dies with a GET unanswered, and the gate's resend is accepted by the
// kernel while the dead process's listening socket is still open, then
// reset unread when it closes. That is the same death: the request is
// sent again and answered. A container that resets every connection
// unread gets the request at most three times, never in a loop.
func TestAResendIntoADyingContainersBacklogIsNotASecondDeath(t *testing.T) {
	cases := []struct {
		name      string
		answerAt  int // the connection, counted from 1, that answers 200; 0: none
		wantCode  int
		wantConns int64
	}{
		{"died, reset by the dying listener, then answered", 3, http.StatusOK, 3},
		{"every resend reset unread: three sends, then a 502", 0, http.StatusBadGateway, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var conns atomic.Int64
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					n := conns.Add(1)
					switch {
					case n == 1:
						// The first death: the request read, no answer.
						_, _ = http.ReadRequest(bufio.NewReader(c))
						c.Close()
					case int(n) == tc.answerAt:
						if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
							_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
						}
						c.Close()
					default:
						resetUnread(t, c)
					}
				}
			}()
			defer func() {
				ln.Close()
				<-done
			}()
			tg := startGate(t, gateConfig(t, ln.Addr().String()), Options{})
			code, body, _ := tg.do(t, http.MethodGet, tg.url("/"), nil, nil)
			if code != tc.wantCode {
				t.Errorf("got %d %q, want %d", code, body, tc.wantCode)
			}
			if n := conns.Load(); n != tc.wantConns {
				t.Errorf("the container got %d connections, want %d", n, tc.wantConns)
			}
		})
	}
}

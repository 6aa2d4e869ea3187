package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/podgate/podgate/test/queueenv"
)

// The serving container of these tests is this test binary run again as a
// child process (a real process, which a test can SIGKILL): TestMain
// serves as it when childAddrEnv is set.
const childAddrEnv = "PODGATE_TEST_CHILD_ADDR"

// runChild is the serving container: an HTTP server on $childAddrEnv that
// answers
//
//	/                       "ok"
//	/stream?n=N&every=D     N lines "partI\n", one every D
//	/slow?d=D               "late" after D
//	/idle?d=D               "first\n", then D of silence, then "second\n"
//	/hold?d=D               "held" after D; prints "holding METHOD" first
//	/ws                     101, then echoes every byte
//
// and on SIGTERM shuts down gracefully (in-flight requests finish).
func runChild(addr string) {
	mux := http.NewServeMux()
	dur := func(r *http.Request, k string) time.Duration {
		d, _ := time.ParseDuration(r.URL.Query().Get(k))
		return d
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		for i := range n {
			fmt.Fprintf(w, "part%d\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(dur(r, "every"))
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(dur(r, "d"))
		_, _ = io.WriteString(w, "late")
	})
	mux.HandleFunc("/idle", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		time.Sleep(dur(r, "d"))
		_, _ = io.WriteString(w, "second\n")
	})
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		fmt.Printf("holding %s\n", r.Method)
		time.Sleep(dur(r, "d"))
		_, _ = io.WriteString(w, "held")
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		_ = brw.Flush()
		_, _ = io.Copy(c, brw)
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: mux}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	shutDown := make(chan struct{})
	go func() {
		defer close(shutDown)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Println("listening")
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	<-shutDown
}

// child is a running serving container.
type child struct {
	cmd   *exec.Cmd
	lines chan string // its stdout
	done  chan struct{}
}

func startChild(t *testing.T, addr string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childAddrEnv+"="+addr)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, lines: make(chan string, 100), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case c.lines <- sc.Text():
			default:
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() { c.stop(syscall.SIGKILL) })
	c.await(t, "listening")
	return c
}

// await waits for the child to print every one of lines, in any order.
func (c *child) await(t *testing.T, lines ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, l := range lines {
		want[l] = true
	}
	timeout := time.After(30 * time.Second)
	for len(want) > 0 {
		select {
		case l := <-c.lines:
			delete(want, l)
		case <-c.done:
			t.Fatalf("the serving container exited before printing %q", lines)
		case <-timeout:
			t.Fatalf("the serving container did not print %q", lines)
		}
	}
}

// stop signals the child and waits until it exited.
func (c *child) stop(sig syscall.Signal) {
	_ = c.cmd.Process.Signal(sig)
	<-c.done
}

// fetched is a GET's outcome.
type fetched struct {
	code int
	body string
	err  error // reading the body
	took time.Duration
}

// fetch GETs url on a connection of its own.
func fetch(t *testing.T, url string) fetched {
	t.Helper()
	start := time.Now()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return fetched{resp.StatusCode, string(b), err, time.Since(start)}
}

// TestTheGateAppliesQueueProxysTimeLimits: the real gate binary with
// Knative's queue container environment applies the revision's three
// time limits as queue-proxy does (its answers: 504 "request timeout"
// before the response started; after, "request timeout" after the body so
// far), ending a cut response as cut short; an upgraded connection only
// ends when the idle limit finds it silent.
func TestTheGateAppliesQueueProxysTimeLimits(t *testing.T) {
	bin := gateBinary(t)
	userPort := freePort(t)
	startChild(t, fmt.Sprintf("127.0.0.1:%d", userPort))

	t.Run("a stream longer than the whole-request limit is cut", func(t *testing.T) {
		g := startQueueGate(t, bin, queueenv.Revision{UserPort: userPort, TimeoutSeconds: 2})
		g.waitReady(t)
		f := fetch(t, g.url+"/stream?n=8&every=500ms")
		code, body, err, took := f.code, f.body, f.err, f.took
		if code != http.StatusOK || !strings.HasPrefix(body, "part0\npart1\n") || !strings.HasSuffix(body, "\nrequest timeout") ||
			strings.Contains(body, "part7") || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("got %d %q (%v), want 200, the parts of 2 s, then request timeout, cut short", code, body, err)
		}
		if took < 2*time.Second || took > 3500*time.Millisecond {
			t.Errorf("cut after %v, want 2 s", took)
		}
		// Before the response starts, the same limit is a 504.
		if f := fetch(t, g.url+"/slow?d=3s"); f.code != http.StatusGatewayTimeout || f.body != "request timeout" {
			t.Errorf("no response within the limit: %d %q, want 504 request timeout", f.code, f.body)
		}
	})
	t.Run("a slow first byte beyond the response-start limit gets 504 request timeout", func(t *testing.T) {
		g := startQueueGate(t, bin, queueenv.Revision{UserPort: userPort, TimeoutSeconds: 10, ResponseStartTimeoutSeconds: 1})
		g.waitReady(t)
		f := fetch(t, g.url+"/slow?d=3s")
		code, body, took := f.code, f.body, f.took
		if code != http.StatusGatewayTimeout || body != "request timeout" || took > 2500*time.Millisecond {
			t.Errorf("got %d %q after %v, want 504 request timeout after 1 s", code, body, took)
		}
		// Once started, a response streams past the response-start limit.
		if f := fetch(t, g.url+"/stream?n=4&every=500ms"); f.code != http.StatusOK || f.body != "part0\npart1\npart2\npart3\n" || f.err != nil {
			t.Errorf("a stream that started: %d %q (%v), want it whole", f.code, f.body, f.err)
		}
	})
	t.Run("an idle stream is cut; one that keeps writing is not", func(t *testing.T) {
		g := startQueueGate(t, bin, queueenv.Revision{UserPort: userPort, TimeoutSeconds: 10, IdleTimeoutSeconds: 1})
		g.waitReady(t)
		f := fetch(t, g.url+"/idle?d=3s")
		code, body, err, took := f.code, f.body, f.err, f.took
		if code != http.StatusOK || body != "first\nrequest timeout" || !errors.Is(err, io.ErrUnexpectedEOF) || took > 2500*time.Millisecond {
			t.Errorf("got %d %q (%v) after %v, want 200 \"first\\nrequest timeout\" cut short after 1 s", code, body, err, took)
		}
		if f := fetch(t, g.url+"/stream?n=5&every=600ms"); f.code != http.StatusOK || f.body != "part0\npart1\npart2\npart3\npart4\n" || f.err != nil {
			t.Errorf("a stream writing every 0.6 s: %d %q (%v), want it whole", f.code, f.body, f.err)
		}
		if f := fetch(t, g.url+"/slow?d=3s"); f.code != http.StatusGatewayTimeout || f.body != "request timeout" {
			t.Errorf("nothing written within the idle limit: %d %q, want 504 request timeout", f.code, f.body)
		}
	})
	t.Run("a websocket outlives the whole-request and response-start limits", func(t *testing.T) {
		g := startQueueGate(t, bin, queueenv.Revision{UserPort: userPort, TimeoutSeconds: 1, ResponseStartTimeoutSeconds: 1})
		g.waitReady(t)
		ws := dialTunnel(t, g.url)
		defer ws.Close()
		for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
			if err := ws.echo(); err != nil {
				t.Fatalf("the tunnel broke: %v", err)
			}
		}
	})
	t.Run("a websocket busy either way outlives the idle limit; a silent one is cut", func(t *testing.T) {
		g := startQueueGate(t, bin, queueenv.Revision{UserPort: userPort, TimeoutSeconds: 1, IdleTimeoutSeconds: 1})
		g.waitReady(t)
		ws := dialTunnel(t, g.url)
		defer ws.Close()
		for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
			if err := ws.echo(); err != nil {
				t.Fatalf("a busy tunnel broke: %v", err)
			}
		}
		start := time.Now()
		_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := ws.br.ReadByte(); !errors.Is(err, io.EOF) || time.Since(start) > 2500*time.Millisecond {
			t.Errorf("a silent tunnel: %v after %v, want closed after 1 s", err, time.Since(start))
		}
	})
}

// tunnelClient is an upgraded connection to the child's /ws echo.
type tunnelClient struct {
	net.Conn
	br *bufio.Reader
	n  int
}

func dialTunnel(t *testing.T, url string) *tunnelClient {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET /ws HTTP/1.1\r\nHost: hello\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		c.Close()
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	return &tunnelClient{Conn: c, br: br}
}

// echo sends a line through the tunnel and reads it back.
func (c *tunnelClient) echo() error {
	c.n++
	msg := fmt.Sprintf("m%d\n", c.n)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, msg); err != nil {
		return err
	}
	got, err := c.br.ReadString('\n')
	if err == nil && got != msg {
		err = fmt.Errorf("echoed %q, want %q", got, msg)
	}
	return err
}

// TestInFlightRequestsRideThroughAKilledContainer: the serving container
// (a real process) is killed (SIGKILL) and stopped (SIGTERM) while 16
// keep-alive clients send GETs through the real gate binary; it starts
// again 1 s later on the same port. No GET fails: those in flight when the
// process died are sent again and held until it is back. A POST in flight
// at the SIGKILL gets queue-proxy's 502.
func TestInFlightRequestsRideThroughAKilledContainer(t *testing.T) {
	bin := gateBinary(t)
	userPort := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", userPort)
	app := startChild(t, addr)
	g := startQueueGate(t, bin, queueenv.Revision{UserPort: userPort})
	g.waitReady(t)

	const conns = 16
	tr := &http.Transport{MaxIdleConnsPerHost: conns}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var ok, failed atomic.Int64
	var mu sync.Mutex
	var failures []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := client.Get(g.url + "/")
				msg := ""
				if err != nil {
					msg = err.Error()
				} else {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK || string(b) != "ok" {
						msg = fmt.Sprintf("%d %q", resp.StatusCode, b)
					}
				}
				if msg == "" {
					ok.Add(1)
					continue
				}
				failed.Add(1)
				mu.Lock()
				if len(failures) < 5 {
					failures = append(failures, msg)
				}
				mu.Unlock()
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	waitOK := func(n int64) {
		t.Helper()
		target := ok.Load() + n
		deadline := time.Now().Add(30 * time.Second)
		for ok.Load() < target {
			if time.Now().After(deadline) {
				t.Fatalf("no %d more successful requests (%d failed: %q)", n, failed.Load(), failures)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// inFlight sends a request to /hold and returns its outcome.
	inFlight := func(method string) <-chan string {
		res := make(chan string, 1)
		go func() {
			req, _ := http.NewRequest(method, g.url+"/hold?d=1s", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				res <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			res <- fmt.Sprintf("%d %s", resp.StatusCode, b)
		}()
		return res
	}

	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		waitOK(1000)
		get, post := inFlight(http.MethodGet), inFlight(http.MethodPost)
		app.await(t, "holding GET", "holding POST")
		stopped := time.Now()
		app.stop(sig)
		time.Sleep(time.Until(stopped.Add(time.Second))) // the container is down for 1 s
		app = startChild(t, addr)
		waitOK(1000)
		if got := <-get; got != "200 held" {
			t.Errorf("%v: a GET in flight: %q, want 200 held (sent again to the restarted container)", sig, got)
		}
		got := <-post
		switch sig {
		case syscall.SIGKILL:
			if !strings.HasPrefix(got, "502 ") {
				t.Errorf("SIGKILL: a POST in flight: %q, want queue-proxy's 502", got)
			}
		case syscall.SIGTERM:
			if got != "200 held" {
				t.Errorf("SIGTERM: a POST in flight: %q, want 200 held (the container finishes it)", got)
			}
		}
	}
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of %d GETs failed, e.g. %q", n, n+ok.Load(), failures)
	} else {
		t.Logf("%d GETs, none failed, across a SIGKILL and a SIGTERM of the serving container", ok.Load())
	}
}

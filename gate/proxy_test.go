package gate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/test/syncbuf"
	"github.com/podgate/podgate/test/testapp"
)

// startUpstream serves h on 127.0.0.1:0 (HTTP/1.1 and h2c) until the test
// ends and returns its address.
func startUpstream(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: h, Protocols: &protos}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return ln.Addr().String()
}

func TestWebsocketUpgradeThroughTheGate(t *testing.T) {
	// A minimal upgrade server: 101, then it echoes every byte in upper case.
	upstream := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "websocket" {
			http.Error(w, "want an upgrade", http.StatusBadRequest)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		buf := make([]byte, 64)
		for {
			n, err := brw.Read(buf)
			if err != nil {
				return
			}
			conn.Write(bytes.ToUpper(buf[:n]))
		}
	}))
	tg := startGate(t, gateConfig(t, upstream), Options{})
	conn, err := net.Dial("tcp", tg.serving)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /ws HTTP/1.1\r\nHost: app\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d, want 101", resp.StatusCode)
	}
	for _, msg := range []string{"hello", "again"} {
		if _, err := io.WriteString(conn, msg); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(br, got); err != nil {
			t.Fatal(err)
		}
		if string(got) != strings.ToUpper(msg) {
			t.Errorf("echo %q, want %q", got, strings.ToUpper(msg))
		}
	}
	conn.Close()
	eventually(t, "the tunnel's request is counted as 101", func() bool {
		return strings.Contains(tg.metricsText(t), `podgate_requests_total{code="101"} 1`)
	})
}

func TestProtocolsThroughTheGate(t *testing.T) {
	upstream := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Proto)
	}))
	tg := startGate(t, gateConfig(t, upstream), Options{})
	for _, tc := range []struct {
		name string
		h2c  bool
		want string
	}{
		{"HTTP/1.1 goes to the container as HTTP/1.1", false, "HTTP/1.1"},
		{"h2c goes to the container as h2c", true, "HTTP/2.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &http.Transport{}
			if tc.h2c {
				var p http.Protocols
				p.SetUnencryptedHTTP2(true)
				tr.Protocols = &p
			}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr}).Get(tg.url("/proto"))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if string(b) != tc.want {
				t.Errorf("the container saw %q, want %q (client spoke %s)", b, tc.want, resp.Proto)
			}
		})
	}
}

// TestStreamingBothWays: the container answers each chunk of the request
// body as it arrives, before the client sends the next one.
func TestStreamingBothWays(t *testing.T) {
	upstream := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			fmt.Fprintf(w, "echo %s\n", sc.Text())
			w.(http.Flusher).Flush()
		}
	}))
	tg := startGate(t, gateConfig(t, upstream), Options{})
	for _, h2c := range []bool{false, true} {
		t.Run(fmt.Sprintf("h2c=%v", h2c), func(t *testing.T) {
			tr := &http.Transport{}
			if h2c {
				var p http.Protocols
				p.SetUnencryptedHTTP2(true)
				tr.Protocols = &p
			}
			defer tr.CloseIdleConnections()
			pr, pw := io.Pipe()
			req, _ := http.NewRequest(http.MethodPost, tg.url("/stream"), pr)
			respc := make(chan *http.Response, 1)
			errc := make(chan error, 1)
			go func() {
				resp, err := (&http.Client{Transport: tr}).Do(req)
				if err != nil {
					errc <- err
					return
				}
				respc <- resp
			}()
			// The transport sends the headers, then reads the body as it comes.
			fmt.Fprintln(pw, "line 1")
			var resp *http.Response
			select {
			case resp = <-respc:
			case err := <-errc:
				t.Fatal(err)
			case <-time.After(testWait):
				t.Fatal("no response while the request body is still open")
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			for i := 1; i <= 3; i++ {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("reading echo %d: %v", i, err)
				}
				if want := fmt.Sprintf("echo line %d\n", i); line != want {
					t.Fatalf("got %q, want %q", line, want)
				}
				if i < 3 {
					fmt.Fprintf(pw, "line %d\n", i+1)
				}
			}
			pw.Close()
			if rest, _ := io.ReadAll(br); len(rest) != 0 {
				t.Errorf("unexpected trailing data %q", rest)
			}
		})
	}
}

func TestTrailersPassThrough(t *testing.T) {
	upstream := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Trailer", "X-Checksum")
		fmt.Fprintf(w, "got %s; request trailer %s", body, r.Trailer.Get("X-Request-Sum"))
		w.Header().Set("X-Checksum", "abc")
	}))
	tg := startGate(t, gateConfig(t, upstream), Options{})
	req, _ := http.NewRequest(http.MethodPost, tg.url("/t"), io.MultiReader(strings.NewReader("payload")))
	req.ContentLength = -1
	req.Trailer = http.Header{"X-Request-Sum": {"xyz"}}
	resp, err := tg.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if want := "got payload; request trailer xyz"; string(b) != want {
		t.Errorf("body %q, want %q", b, want)
	}
	if got := resp.Trailer.Get("X-Checksum"); got != "abc" {
		t.Errorf("response trailer X-Checksum = %q, want abc", got)
	}
}

func TestForwardingHeaders(t *testing.T) {
	upstream := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{
			"host":  r.Host,
			"xff":   r.Header.Get("X-Forwarded-For"),
			"xfh":   r.Header.Get("X-Forwarded-Host"),
			"xfp":   r.Header.Get("X-Forwarded-Proto"),
			"fwd":   r.Header.Get("Forwarded"),
			"other": r.Header.Get("X-Custom"),
		})
	}))
	tg := startGate(t, gateConfig(t, upstream), Options{})
	for _, tc := range []struct {
		name   string
		header http.Header
		want   map[string]string
	}{
		{"a direct client gets X-Forwarded-* from the gate",
			http.Header{"X-Custom": {"v"}},
			map[string]string{"host": "app.example.com", "xff": "127.0.0.1", "xfh": "app.example.com", "xfp": "http", "fwd": "", "other": "v"}},
		{"an ingress's headers are extended, not replaced, and a Forwarded header is made from them",
			http.Header{"X-Forwarded-For": {"203.0.113.7, 10.0.0.1"}, "X-Forwarded-Host": {"public.example"}, "X-Forwarded-Proto": {"https"}},
			map[string]string{"host": "app.example.com", "xff": "203.0.113.7, 10.0.0.1, 127.0.0.1", "xfh": "public.example", "xfp": "https",
				"fwd": "for=203.0.113.7;host=public.example;proto=https, for=10.0.0.1", "other": ""}},
		{"a client's Forwarded header is kept",
			http.Header{"Forwarded": {"for=198.51.100.1"}},
			map[string]string{"host": "app.example.com", "xff": "127.0.0.1", "xfh": "app.example.com", "xfp": "http", "fwd": "for=198.51.100.1", "other": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, tg.url("/h"), nil)
			req.Host = "app.example.com"
			for k, v := range tc.header {
				req.Header[k] = v
			}
			resp, err := tg.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got map[string]string
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			for k, want := range tc.want {
				if got[k] != want {
					t.Errorf("%s = %q, want %q", k, got[k], want)
				}
			}
		})
	}
}

// blocker is an upstream whose requests wait until released, and which
// counts how many are inside at once.
type blocker struct {
	release chan struct{}
	arrived chan struct{}
	inside  atomic.Int64
	peak    atomic.Int64
}

func newBlocker() *blocker {
	return &blocker{release: make(chan struct{}), arrived: make(chan struct{}, 100)}
}

func (b *blocker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := b.inside.Add(1)
	defer b.inside.Add(-1)
	for {
		p := b.peak.Load()
		if n <= p || b.peak.CompareAndSwap(p, n) {
			break
		}
	}
	b.arrived <- struct{}{}
	select {
	case <-b.release:
	case <-r.Context().Done():
		return
	}
	fmt.Fprint(w, "done")
}

func TestContainerConcurrencyQueues(t *testing.T) {
	b := newBlocker()
	upstream := startUpstream(t, b)
	cfg := gateConfig(t, upstream)
	cfg.ContainerConcurrency = 2
	tg := startGate(t, cfg, Options{})

	const n = 5
	results := make(chan int, n)
	for i := 0; i < n; i++ {
		go func() {
			resp, err := tg.client.Get(tg.url("/slow"))
			if err != nil {
				results <- -1
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			results <- resp.StatusCode
		}()
	}
	<-b.arrived
	<-b.arrived
	eventually(t, "three requests queue", func() bool { return strings.Contains(tg.metricsText(t), "podgate_queue_depth 3") })
	if in := b.inside.Load(); in != 2 {
		t.Errorf("%d requests in the container, want 2", in)
	}
	close(b.release)
	for i := 0; i < n; i++ {
		if code := <-results; code != http.StatusOK {
			t.Errorf("request %d: %d, want 200", i, code)
		}
	}
	if p := b.peak.Load(); p != 2 {
		t.Errorf("peak concurrency in the container %d, want 2", p)
	}
}

func TestContainerConcurrencyQueueFull(t *testing.T) {
	b := newBlocker()
	upstream := startUpstream(t, b)
	cfg := gateConfig(t, upstream)
	cfg.ContainerConcurrency = 1 // one in the container, ten in the queue
	tg := startGate(t, cfg, Options{})
	var wg sync.WaitGroup
	for i := 0; i < 11; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, err := tg.client.Get(tg.url("/slow")); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	<-b.arrived
	eventually(t, "the queue is full", func() bool { return strings.Contains(tg.metricsText(t), "podgate_queue_depth 10") })
	code, body, _ := tg.do(t, http.MethodGet, tg.url("/one-too-many"), nil, nil)
	if code != http.StatusServiceUnavailable || body != "pending request queue full\n" {
		t.Errorf("got %d %q, want 503 pending request queue full", code, body)
	}
	close(b.release)
	wg.Wait()
}

func TestRequestTimeout(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	t.Run("no response in time is 504 request timeout", func(t *testing.T) {
		b := newBlocker()
		upstream := startUpstream(t, b)
		cfg := gateConfig(t, upstream)
		cfg.RevisionTimeout = 10 * time.Second
		tg := startGate(t, cfg, Options{Clock: clk})
		type result struct {
			code int
			body string
		}
		res := make(chan result, 1)
		go func() {
			resp, err := tg.client.Get(tg.url("/slow"))
			if err != nil {
				res <- result{-1, err.Error()}
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			res <- result{resp.StatusCode, string(body)}
		}()
		<-b.arrived
		clk.Step(10 * time.Second)
		r := <-res
		if r.code != http.StatusGatewayTimeout || r.body != "request timeout" {
			t.Errorf("got %d %q, want 504 request timeout", r.code, r.body)
		}
		close(b.release)
	})
	t.Run("a response that started is cut at the timeout: the body so far, request timeout, cut short", func(t *testing.T) {
		proceed := make(chan struct{})
		defer close(proceed)
		started := make(chan struct{})
		upstream := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			fmt.Fprint(w, "first ")
			w.(http.Flusher).Flush()
			close(started)
			<-proceed
			fmt.Fprint(w, "second")
		}))
		cfg := gateConfig(t, upstream)
		cfg.RevisionTimeout = 10 * time.Second
		tg := startGate(t, cfg, Options{Clock: clk})
		resp, err := tg.client.Get(tg.url("/stream"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		<-started
		clk.Step(10 * time.Second)
		body, err := io.ReadAll(resp.Body)
		if !errors.Is(err, io.ErrUnexpectedEOF) || string(body) != "first request timeout" || resp.StatusCode != http.StatusOK {
			t.Errorf("got %d %q (%v), want 200 \"first request timeout\" cut short (unexpected EOF)", resp.StatusCode, body, err)
		}
	})
	t.Run("over HTTP/2 a cut response's stream is reset", func(t *testing.T) {
		proceed := make(chan struct{})
		defer close(proceed)
		upstream := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "first ")
			w.(http.Flusher).Flush()
			<-proceed
		}))
		cfg := gateConfig(t, upstream)
		cfg.RevisionTimeout = 10 * time.Second
		tg := startGate(t, cfg, Options{Clock: clk})
		client := h2cClient()
		defer client.Transport.(*http.Transport).CloseIdleConnections()
		resp, err := client.Get(tg.url("/stream"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		first := make([]byte, len("first "))
		if _, err := io.ReadFull(resp.Body, first); err != nil {
			t.Fatal(err)
		}
		clk.Step(10 * time.Second)
		rest, err := io.ReadAll(resp.Body)
		if resp.ProtoMajor != 2 || err == nil || !strings.Contains(err.Error(), "stream error") || string(first)+string(rest) != "first request timeout" {
			t.Errorf("got %s %q (%v), want \"first request timeout\" and the stream reset", resp.Proto, string(first)+string(rest), err)
		}
	})
	t.Run("the response-start limit answers 504; once the response started it is over", func(t *testing.T) {
		proceed := make(chan struct{})
		arrived := make(chan string, 2)
		upstream := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/stream" {
				fmt.Fprint(w, "first ")
				w.(http.Flusher).Flush()
			}
			arrived <- r.URL.Path
			<-proceed
			fmt.Fprint(w, "second")
		}))
		cfg := gateConfig(t, upstream)
		cfg.RevisionTimeout = 0
		cfg.ResponseStartTimeout = 5 * time.Second
		tg := startGate(t, cfg, Options{Clock: clk})
		res := make(chan string, 1)
		go func() { res <- get(tg.client, tg.url("/slow")) }()
		<-arrived
		clk.Step(5 * time.Second)
		if got := <-res; got != "504 request timeout <nil>" {
			t.Errorf("no response start in time: %s, want 504 request timeout", got)
		}
		// The 504 left the connection open: the next request takes it.
		var reused bool
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(),
			&httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}), http.MethodGet, tg.url("/stream"), nil)
		resp, err := tg.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if !reused {
			t.Error("the connection of the 504 was not kept for the next request")
		}
		<-arrived
		clk.Step(time.Hour)
		close(proceed)
		if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "first second" {
			t.Errorf("a response that started: %q (%v), want \"first second\"", b, err)
		}
	})
	t.Run("the idle limit answers 504 when nothing came and cuts a silent stream", func(t *testing.T) {
		proceed := make(chan struct{})
		defer close(proceed)
		arrived := make(chan string, 2)
		upstream := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/stream" {
				fmt.Fprint(w, "first ")
				w.(http.Flusher).Flush()
			}
			arrived <- r.URL.Path
			<-proceed
		}))
		cfg := gateConfig(t, upstream)
		cfg.RevisionTimeout = 0
		cfg.IdleTimeout = 5 * time.Second
		tg := startGate(t, cfg, Options{Clock: clk})
		res := make(chan string, 1)
		go func() { res <- get(tg.client, tg.url("/slow")) }()
		<-arrived
		clk.Step(5 * time.Second)
		if got := <-res; got != "504 request timeout <nil>" {
			t.Errorf("nothing written: %s, want 504 request timeout", got)
		}
		resp, err := tg.client.Get(tg.url("/stream"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		<-arrived
		first := make([]byte, len("first "))
		if _, err := io.ReadFull(resp.Body, first); err != nil {
			t.Fatal(err)
		}
		clk.Step(5 * time.Second)
		rest, err := io.ReadAll(resp.Body)
		if !errors.Is(err, io.ErrUnexpectedEOF) || string(first)+string(rest) != "first request timeout" {
			t.Errorf("a silent stream: %q (%v), want \"first request timeout\" cut short", string(first)+string(rest), err)
		}
	})
}

// get is "CODE BODY ERR" of a GET.
func get(c *http.Client, url string) string {
	resp, err := c.Get(url)
	if err != nil {
		return fmt.Sprintf("0  %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s %v", resp.StatusCode, b, err)
}

// requestLogLine is the request log's JSON shape, Knative's request log
// template (the fields the test reads).
type requestLogLine struct {
	HTTPRequest struct {
		RequestMethod string `json:"requestMethod"`
		RequestURL    string `json:"requestUrl"`
		Status        int    `json:"status"`
		ResponseSize  string `json:"responseSize"`
		UserAgent     string `json:"userAgent"`
		ServerIP      string `json:"serverIp"`
		Latency       string `json:"latency"`
		Protocol      string `json:"protocol"`
	} `json:"httpRequest"`
}

func TestMetricsAndRequestLog(t *testing.T) {
	upstream := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	var log syncbuf.Buffer
	cfg := gateConfig(t, upstream)
	cfg.PodIP = "127.0.0.1"
	tg := startGate(t, cfg, Options{RequestLog: &log, LogProbeRequests: true})
	tg.waitReady(t, true)
	for _, p := range []string{"/a", "/b", "/missing"} {
		tg.do(t, http.MethodGet, tg.url(p), nil, http.Header{"User-Agent": {"test-client"}})
	}
	tg.health(t)
	m := tg.metricsText(t)
	for _, want := range []string{
		"# TYPE podgate_requests_total counter",
		`podgate_requests_total{code="200"} 2`,
		`podgate_requests_total{code="404"} 1`,
		"podgate_request_duration_seconds_count 3",
		`podgate_request_duration_seconds_bucket{le="+Inf"} 3`,
		"podgate_requests_in_flight 0",
		"podgate_ready 1",
		`podgate_container_ready{container="user-container"} 1`,
		"podgate_ridethrough_holds_total 0",
		"process_resident_memory_bytes ",
	} {
		contains(t, "metrics", m, want)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d request log lines, want 4 (3 requests, 1 health check):\n%s", len(lines), log.String())
	}
	var entry requestLogLine
	if err := json.Unmarshal([]byte(lines[2]), &entry); err != nil {
		t.Fatal(err)
	}
	e := entry.HTTPRequest
	if e.RequestMethod != "GET" || e.RequestURL != "/missing" || e.Status != 404 || e.UserAgent != "test-client" ||
		e.ServerIP != "127.0.0.1" || e.Protocol != "HTTP/1.1" || !strings.HasSuffix(e.Latency, "s") || e.ResponseSize != "19" {
		t.Errorf("request log entry %+v", e)
	}
	var probeEntry requestLogLine
	_ = json.Unmarshal([]byte(lines[3]), &probeEntry)
	if probeEntry.HTTPRequest.Status != 200 || probeEntry.HTTPRequest.UserAgent != "kube-probe/1.37" {
		t.Errorf("health check log entry %+v", probeEntry.HTTPRequest)
	}
}

// TestGRPCThroughTheGate makes a gRPC call (h2c, status in trailers) to a
// real gRPC health server through the gate.
func TestGRPCThroughTheGate(t *testing.T) {
	app := startApp(t, testapp.Config{GRPCAddr: "127.0.0.1:0"})
	tg := startGate(t, gateConfig(t, app.GRPCAddr()), Options{})
	conn, err := grpc.NewClient("passthrough:///"+tg.serving, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	health := healthpb.NewHealthClient(conn)
	resp, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: testapp.GRPCServiceReadiness})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Check through the gate: %v %v, want SERVING", resp.GetStatus(), err)
	}
	_, err = health.Check(ctx, &healthpb.HealthCheckRequest{Service: "no-such-service"})
	if status.Code(err) != codes.NotFound {
		t.Errorf("Check of an unknown service: %v, want NotFound (a status carried in trailers)", err)
	}
}

// TestGETAnswersPassAsReverseProxyPassesThem pins what the gate's own
// path for bodiless requests (proxy.serveDirect) does with an answer,
// which httputil.ReverseProxy did before: 1xx answers, hop-by-hop
// headers, trailers and a streamed body.
func TestGETAnswersPassAsReverseProxyPassesThem(t *testing.T) {
	next := make(chan struct{})
	upstream := startUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hints":
			w.Header().Set("Link", "</a.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			w.Header().Del("Link")
			w.Header().Set("X-Final", "yes")
			fmt.Fprint(w, "final")
		case "/hop":
			w.Header().Set("Connection", "X-Hop")
			w.Header().Set("X-Hop", "for the gate only")
			w.Header().Set("Keep-Alive", "timeout=5")
			w.Header().Set("X-End", "kept")
			fmt.Fprint(w, "hop")
		case "/trailer":
			w.Header().Set("Trailer", "X-Checksum")
			fmt.Fprint(w, "body")
			w.Header().Set("X-Checksum", "abc")
		case "/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: one\n\n")
			w.(http.Flusher).Flush()
			<-next // the client saw the first event before the second exists
			fmt.Fprint(w, "data: two\n\n")
		}
	}))
	tg := startGate(t, gateConfig(t, upstream), Options{})
	get := func(t *testing.T, path string, trace *httptrace.ClientTrace) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, tg.url(path), nil)
		if trace != nil {
			req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
		}
		resp, err := tg.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	t.Run("a 103 reaches the client with its headers, the final answer without them", func(t *testing.T) {
		var hints []string
		resp := get(t, "/hints", &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			hints = append(hints, fmt.Sprint(code, " ", h.Get("Link")))
			return nil
		}})
		body, _ := io.ReadAll(resp.Body)
		if len(hints) != 1 || hints[0] != "103 </a.css>; rel=preload" {
			t.Errorf("1xx answers %q", hints)
		}
		if string(body) != "final" || resp.Header.Get("X-Final") != "yes" || resp.Header.Get("Link") != "" {
			t.Errorf("final answer %q with headers %v", body, resp.Header)
		}
	})
	t.Run("hop-by-hop headers of the answer stay with the gate", func(t *testing.T) {
		resp := get(t, "/hop", nil)
		_, _ = io.ReadAll(resp.Body)
		if resp.Header.Get("X-Hop") != "" || resp.Header.Get("Keep-Alive") != "" || resp.Header.Get("X-End") != "kept" {
			t.Errorf("headers %v", resp.Header)
		}
	})
	t.Run("trailers follow the body", func(t *testing.T) {
		resp := get(t, "/trailer", nil)
		body, _ := io.ReadAll(resp.Body)
		if string(body) != "body" || resp.Trailer.Get("X-Checksum") != "abc" {
			t.Errorf("body %q, trailer %v", body, resp.Trailer)
		}
	})
	t.Run("a streamed answer is passed on as it comes", func(t *testing.T) {
		resp := get(t, "/stream", nil)
		br := bufio.NewReader(resp.Body)
		first := make(chan string, 1)
		go func() {
			line, _ := br.ReadString('\n')
			first <- line
		}()
		select {
		case line := <-first:
			close(next)
			if line != "data: one\n" {
				t.Fatalf("first line %q", line)
			}
		case <-time.After(testWait):
			close(next)
			t.Fatal("the first event did not arrive while the upstream held the second")
		}
		rest, _ := io.ReadAll(br)
		if string(rest) != "\ndata: two\n\n" {
			t.Errorf("rest %q", rest)
		}
	})
}

package activator

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// testGate is a real HTTP server playing a pod's gate: it answers the
// activator's health checks as the gate does and serves traffic with
// handler (default: its name).
type testGate struct {
	name    string
	srv     *httptest.Server
	ready   atomic.Bool
	body    atomic.Value // health body when ready (default "queue")
	probes  atomic.Int64
	served  atomic.Int64
	handler http.Handler

	mu        sync.Mutex
	probeHdrs []http.Header
	paths     []string
}

func isActivatorProbe(r *http.Request) bool {
	return r.Header.Get("User-Agent") == ProbeUserAgent && r.Header.Get(ProbeHeader) != ""
}

func newGate(t *testing.T, name string, ready bool, handler http.Handler) *testGate {
	t.Helper()
	g := &testGate{name: name, handler: handler}
	g.ready.Store(ready)
	g.body.Store("queue")
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *testGate) addr() string { return strings.TrimPrefix(g.srv.URL, "http://") }

func (g *testGate) serve(w http.ResponseWriter, r *http.Request) {
	if isActivatorProbe(r) {
		g.mu.Lock()
		g.probeHdrs = append(g.probeHdrs, r.Header.Clone())
		g.paths = append(g.paths, r.URL.Path)
		g.mu.Unlock()
		g.probes.Add(1)
		if g.ready.Load() {
			_, _ = io.WriteString(w, g.body.Load().(string))
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "shutting down")
		return
	}
	g.served.Add(1)
	if g.handler != nil {
		g.handler.ServeHTTP(w, r)
		return
	}
	_, _ = io.WriteString(w, g.name)
}

func (g *testGate) pod(ready, fastPath bool) Pod {
	return Pod{Name: g.name, Addr: g.addr(), Ready: ready, FastPath: fastPath}
}

// harness is a target behind a real listener, with a fake clock that only
// moves when a test steps it.
type harness struct {
	t      *testing.T
	clock  *testingclock.FakeClock
	target *Target
	front  *httptest.Server
	client *http.Client
	tr     *http.Transport
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	h := &harness{t: t, clock: testingclock.NewFakeClock(time.Now())}
	if cfg.Clock == nil {
		cfg.Clock = h.clock
	}
	tg, err := NewTarget("ns/svc", cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.target = tg
	h.front = httptest.NewServer(tg)
	h.tr = &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}
	h.client = &http.Client{Transport: h.tr}
	t.Cleanup(func() {
		h.tr.CloseIdleConnections()
		h.front.Close()
		tg.Close()
	})
	return h
}

type result struct {
	code int
	body string
	err  error
}

func (h *harness) do(method, body string) result {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.front.URL+"/x", rd)
	if err != nil {
		return result{err: err}
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{code: resp.StatusCode, body: string(b), err: err}
}

func (h *harness) get() result { return h.do(http.MethodGet, "") }

// goGet sends a request in the background.
func (h *harness) goGet() <-chan result {
	ch := make(chan result, 1)
	go func() { ch <- h.get() }()
	return ch
}

func (h *harness) backend(name string) BackendStatus {
	for _, b := range h.target.Status().Backends {
		if b.Name == name {
			return b
		}
	}
	h.t.Fatalf("no backend %q in %+v", name, h.target.Status())
	return BackendStatus{}
}

// probed waits until the gates answered at least n health checks each.
func (h *harness) probed(n int, gates ...*testGate) {
	h.t.Helper()
	for _, g := range gates {
		waitFor(h.t, g.name+" probed", func() bool { return h.backend(g.name).Probes >= n })
	}
}

func (h *harness) queued(n int) {
	h.t.Helper()
	waitFor(h.t, "requests held", func() bool { return h.target.Status().Queued == n })
}

const patience = 10 * time.Second

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// await returns the result or fails after the deadline.
func await(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(patience):
		t.Fatal("no response")
		return result{}
	}
}

// gateBlock is a traffic handler that holds requests until released.
type gateBlock struct {
	entered chan struct{}
	release chan struct{}
	name    string
}

func newBlock(name string) *gateBlock {
	return &gateBlock{entered: make(chan struct{}, 100), release: make(chan struct{}, 100), name: name}
}

func (b *gateBlock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.entered <- struct{}{}
	select {
	case <-b.release:
	case <-r.Context().Done():
		return
	}
	_, _ = io.WriteString(w, b.name)
}

func contextWithCancel() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

// newGateAt starts a gate on a given loopback address (a pod coming back
// on its old address).
func newGateAt(t *testing.T, name, addr string) *testGate {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	g := &testGate{name: name}
	g.ready.Store(true)
	g.body.Store("queue")
	g.srv = httptest.NewUnstartedServer(http.HandlerFunc(g.serve))
	g.srv.Listener.Close()
	g.srv.Listener = l
	g.srv.Start()
	t.Cleanup(g.srv.Close)
	return g
}

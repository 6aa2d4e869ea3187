package activator

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// connGate is a test gate that tells its traffic connections apart from
// its health checks' (by the client's address) and sees them close.
type connGate struct {
	*testGate
	mu      sync.Mutex
	traffic map[string]bool // remote address → closed
}

func newConnGate(t *testing.T, name string, handler http.Handler) *connGate {
	t.Helper()
	g := &connGate{testGate: &testGate{name: name, handler: handler}, traffic: map[string]bool{}}
	g.ready.Store(true)
	g.body.Store("queue")
	g.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isActivatorProbe(r) {
			g.mu.Lock()
			if _, ok := g.traffic[r.RemoteAddr]; !ok {
				g.traffic[r.RemoteAddr] = false
			}
			g.mu.Unlock()
		}
		g.serve(w, r)
	}))
	g.srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			g.mu.Lock()
			if _, ok := g.traffic[c.RemoteAddr().String()]; ok {
				g.traffic[c.RemoteAddr().String()] = true
			}
			g.mu.Unlock()
		}
	}
	g.srv.Start()
	t.Cleanup(g.srv.Close)
	return g
}

// conns reports the traffic connections seen and how many of them closed.
func (g *connGate) conns() (seen, closed int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.traffic {
		seen++
		if c {
			closed++
		}
	}
	return seen, closed
}

// TestGETsShareOneKeptAliveConnectionClosedWhenThePodLeaves pins the front
// door's HTTP/1.1 fast path on real sockets: GETs one after another reach
// the gate on one kept-alive connection, and once the pod leaves the
// target that connection is closed, at once when idle, at the end of its
// answer when busy (not left open to a pod that is gone).
func TestGETsShareOneKeptAliveConnectionClosedWhenThePodLeaves(t *testing.T) {
	for _, tc := range []struct {
		name string
		busy bool // a request is in flight when the pod leaves
	}{
		{"idle when the pod leaves: closed at once", false},
		{"busy when the pod leaves: closed when its answer ends", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			block := newBlock("a")
			var handler http.Handler
			if tc.busy {
				handler = block
			}
			g := newConnGate(t, "a", handler)
			h.target.Update([]Pod{g.pod(true, false)})
			waitFor(t, "a usable", func() bool { return h.target.Status().Ready == 1 })
			for i := range 5 {
				if tc.busy {
					block.release <- struct{}{}
				}
				if r := h.get(); r.err != nil || r.code != http.StatusOK || r.body != "a" {
					t.Fatalf("GET %d: %+v", i, r)
				}
				if tc.busy {
					<-block.entered
				}
			}
			if seen, closed := g.conns(); seen != 1 || closed != 0 {
				t.Fatalf("5 GETs: %d traffic connections (%d closed), want 1 kept alive", seen, closed)
			}
			var inflight <-chan result
			if tc.busy {
				inflight = h.goGet()
				<-block.entered
			}
			h.target.Update(nil)
			if tc.busy {
				if seen, closed := g.conns(); seen != 1 || closed != 0 {
					t.Fatalf("pod left with a request in flight: %d connections, %d closed, want its one open", seen, closed)
				}
				block.release <- struct{}{}
				if r := await(t, inflight); r.code != http.StatusOK || r.body != "a" {
					t.Fatalf("the request in flight: %+v", r)
				}
			}
			waitFor(t, "the traffic connection closed", func() bool { _, closed := g.conns(); return closed == 1 })
			if seen, _ := g.conns(); seen != 1 {
				t.Errorf("%d traffic connections, want 1", seen)
			}
		})
	}
}

// TestGETOnADeadKeptAliveConnectionGoesToAnotherPod pins the retry of a
// GET whose kept-alive connection to a gate died with the gate: sent again
// on a fresh connection, whose refused dial makes it go to another pod.
func TestGETOnADeadKeptAliveConnectionGoesToAnotherPod(t *testing.T) {
	h := newHarness(t, Config{})
	dead := newGate(t, "a", true, nil)
	b := newGate(t, "b", true, nil)
	h.target.Update([]Pod{dead.pod(true, false), b.pod(true, false)})
	waitFor(t, "both usable", func() bool { return h.target.Status().Ready == 2 })
	for i := 0; dead.served.Load() == 0; i++ {
		if i == 20 {
			t.Fatal("20 GETs and none went to a")
		}
		if r := h.get(); r.code != http.StatusOK {
			t.Fatalf("GET: %+v", r)
		}
	}
	dead.srv.Close() // its kept-alive connections close; new ones are refused
	for i := range 4 {
		if r := h.get(); r.code != http.StatusOK || r.body != "b" {
			t.Fatalf("GET %d after a died: %+v, want 200 from b", i, r)
		}
	}
	if st := h.backend("a"); st.Usable {
		t.Errorf("a still usable: %+v", st)
	}
}

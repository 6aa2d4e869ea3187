package activator

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
)

// TestDialReachesGatesForRequestsAndHealthChecks pins Config.Dial: the
// health checks and the proxied requests both go through it, at the
// address the pod source gave, and a dial it refuses is a connect failure
// (the request goes to another pod).
func TestDialReachesGatesForRequestsAndHealthChecks(t *testing.T) {
	a := newGate(t, "a", true, nil)
	b := newGate(t, "b", true, nil)
	// Pod addresses as an API server lists them, mapped to the test
	// gates; "a" is refused once cut is set.
	var (
		mu    sync.Mutex
		cut   bool
		dials = map[string]int{}
	)
	where := map[string]string{"10.0.0.1:8012": a.addr(), "10.0.0.2:8012": b.addr()}
	var d net.Dialer
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		dials[addr]++
		to, ok := where[addr]
		if !ok || (cut && addr == "10.0.0.1:8012") {
			return nil, errors.New("refused by the test's dialer")
		}
		return d.DialContext(ctx, network, to)
	}
	h := newHarness(t, Config{Dial: dial})
	h.target.Update([]Pod{{Name: "a", Addr: "10.0.0.1:8012", Ready: true}, {Name: "b", Addr: "10.0.0.2:8012", Ready: true}})
	waitFor(t, "both pods usable", func() bool { return h.target.Status().Ready == 2 })
	seen := map[string]bool{}
	for range 6 {
		r := h.get()
		if r.err != nil || r.code != http.StatusOK {
			t.Fatalf("got %+v", r)
		}
		seen[r.body] = true
	}
	if !seen["a"] || !seen["b"] {
		t.Errorf("answered by %v, want both pods", seen)
	}
	mu.Lock()
	cut = true
	mu.Unlock()
	a.srv.CloseClientConnections() // the kept-alive connections go: the next requests dial
	for range 4 {
		if r := h.get(); r.code != http.StatusOK || r.body != "b" {
			t.Fatalf("with a's dial refused: %+v, want 200 from b", r)
		}
	}
	if st := h.backend("a"); st.Usable {
		t.Errorf("a is usable with its dial refused: %+v", st)
	}
	mu.Lock()
	defer mu.Unlock()
	for addr, n := range dials {
		if where[addr] == "" {
			t.Errorf("dialed %s, which no pod has", addr)
		}
		if n == 0 {
			t.Errorf("no dial to %s", addr)
		}
	}
}

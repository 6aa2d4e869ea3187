package activator

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestConnectFailure(t *testing.T) {
	t.Run("request retried on another backend, body intact; the refusing pod is marked unready", func(t *testing.T) {
		h := newHarness(t, Config{})
		bodies := make(chan string, 10)
		dead := newGate(t, "a", true, nil)
		b := newGate(t, "b", true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			data, _ := io.ReadAll(r.Body)
			bodies <- string(data)
			_, _ = io.WriteString(w, "b")
		}))
		h.target.Update([]Pod{dead.pod(true, false), b.pod(true, false)})
		h.probed(1, dead, b)
		dead.srv.Close() // connections are refused from now on; its gate was ready
		for i := 0; i < 4; i++ {
			r := h.do(http.MethodPost, "payload")
			if r.code != http.StatusOK || r.body != "b" {
				t.Fatalf("request %d: %+v, want 200 from b", i, r)
			}
			if got := <-bodies; got != "payload" {
				t.Fatalf("b got body %q", got)
			}
		}
		if st := h.backend("a"); st.Usable || st.GateReady {
			t.Errorf("refusing pod still usable: %+v", st)
		}
	})
	t.Run("no other backend: held until one is ready", func(t *testing.T) {
		h := newHarness(t, Config{})
		dead := newGate(t, "a", true, nil)
		h.target.Update([]Pod{dead.pod(true, false)})
		h.probed(1, dead)
		dead.srv.Close()
		held := h.goGet()
		h.queued(1)
		b := newGate(t, "b", true, nil)
		h.target.Update([]Pod{dead.pod(true, false), b.pod(true, false)})
		if r := await(t, held); r.code != http.StatusOK || r.body != "b" {
			t.Fatalf("got %+v, want 200 from b", r)
		}
	})
	t.Run("the refusing pod is back once its gate answers ready again", func(t *testing.T) {
		h := newHarness(t, Config{})
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close() // nothing listens: refused
		h.target.Update([]Pod{{Name: "a", Addr: addr, Ready: true}})
		waitFor(t, "a probed", func() bool { return h.backend("a").Probes >= 1 })
		if h.backend("a").GateReady {
			t.Fatal("refusing gate seen ready")
		}
		newGateAt(t, "a", addr)
		h.clock.Step(DefaultProbeInterval)
		waitFor(t, "a ready", func() bool { return h.backend("a").Usable })
		if r := h.get(); r.body != "a" {
			t.Fatalf("got %+v", r)
		}
	})
}

// A request whose bytes reached a backend is never sent again, even when
// the backend then drops the connection.
func TestSentRequestIsNotReplayed(t *testing.T) {
	h := newHarness(t, Config{})
	a := newGate(t, "a", true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close() // dies after reading the request
		}
	}))
	b := newGate(t, "b", true, nil)
	h.target.Update([]Pod{a.pod(true, false)})
	h.probed(1, a)
	h.target.Update([]Pod{a.pod(true, false), b.pod(true, false)})
	h.probed(1, b)
	// Both idle: the first pick is a, the first in the rotation.
	r := h.do(http.MethodPost, strings.Repeat("x", 100))
	if a.served.Load() != 1 {
		t.Fatalf("a served %d requests; the test needs the POST to go to a", a.served.Load())
	}
	if r.code != http.StatusBadGateway {
		t.Fatalf("got %+v, want 502", r)
	}
	if b.served.Load() != 0 {
		t.Fatalf("the request was replayed to b")
	}
}

// A response that breaks mid-body aborts the client's response and still
// frees the pod's slot.
func TestBrokenResponseFreesTheSlot(t *testing.T) {
	h := newHarness(t, Config{ContainerConcurrency: 1})
	a := newGate(t, "a", true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = io.WriteString(w, "short")
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	h.target.Update([]Pod{a.pod(true, false)})
	h.probed(1, a)
	for i := 0; i < 3; i++ { // with capacity 1, a leaked slot would hold the next
		if r := h.get(); r.err == nil {
			t.Fatalf("request %d: %+v, want a broken response", i, r)
		}
		waitFor(t, "slot freed", func() bool { return h.backend("a").InFlight == 0 })
	}
}

package activator

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// adminPort plays a gate's admin port: it records the /unrouted messages.
type adminPort struct {
	srv  *httptest.Server
	mu   sync.Mutex
	told []string // "METHOD /path?query"
}

func newAdminPort(t *testing.T) *adminPort {
	t.Helper()
	a := &adminPort{}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.told = append(a.told, r.Method+" "+r.URL.RequestURI())
		a.mu.Unlock()
		_, _ = io.WriteString(w, "ok\n")
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *adminPort) addr() string { return strings.TrimPrefix(a.srv.URL, "http://") }

func (a *adminPort) messages() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.told...)
}

func TestGatesAreToldWhenTheyGetNoMoreTraffic(t *testing.T) {
	const want = "POST /unrouted?pod=a"
	t.Run("a terminating pod with nothing in flight is told at once", func(t *testing.T) {
		h := newHarness(t, Config{})
		g, admin := newGate(t, "a", true, nil), newAdminPort(t)
		p := g.pod(true, false)
		p.AdminAddr = admin.addr()
		h.target.Update([]Pod{p})
		h.probed(1, g)
		if r := h.get(); r.code != 200 {
			t.Fatalf("request: %+v", r)
		}
		if got := admin.messages(); len(got) != 0 {
			t.Fatalf("told %v while routing to it", got)
		}
		p.Terminating = true
		h.target.Update([]Pod{p})
		waitFor(t, "the gate told", func() bool { return len(admin.messages()) == 1 })
		if got := admin.messages()[0]; got != want {
			t.Errorf("message %q, want %q", got, want)
		}
	})
	t.Run("a terminating pod is told when its last request ends", func(t *testing.T) {
		h := newHarness(t, Config{})
		block := newBlock("a")
		g, admin := newGate(t, "a", true, block), newAdminPort(t)
		p := g.pod(true, false)
		p.AdminAddr = admin.addr()
		h.target.Update([]Pod{p})
		h.probed(1, g)
		res := h.goGet()
		<-block.entered
		p.Terminating = true
		h.target.Update([]Pod{p})
		if got := admin.messages(); len(got) != 0 {
			t.Fatalf("told %v with a request in flight", got)
		}
		block.release <- struct{}{}
		if r := await(t, res); r.code != 200 {
			t.Fatalf("request in flight: %+v", r)
		}
		waitFor(t, "the gate told", func() bool { return len(admin.messages()) == 1 })
		if got := admin.messages()[0]; got != want {
			t.Errorf("message %q, want %q", got, want)
		}
	})
	t.Run("closing the target tells every gate once; unready pods are not told", func(t *testing.T) {
		h := newHarness(t, Config{})
		g, admin := newGate(t, "a", true, nil), newAdminPort(t)
		p := g.pod(true, false)
		p.AdminAddr = admin.addr()
		h.target.Update([]Pod{p})
		h.probed(1, g)
		p.Ready = false
		h.target.Update([]Pod{p})
		if got := admin.messages(); len(got) != 0 {
			t.Fatalf("told %v: an unready pod may come back", got)
		}
		h.target.Close() // waits for the messages
		if got := admin.messages(); len(got) != 1 || got[0] != want {
			t.Errorf("messages %v, want one %q", got, want)
		}
		h.target.Close()
		if got := admin.messages(); len(got) != 1 {
			t.Errorf("messages %v after a second Close, want still one", got)
		}
	})
	t.Run("a pod without an admin address is not told", func(t *testing.T) {
		h := newHarness(t, Config{})
		g := newGate(t, "a", true, nil)
		p := g.pod(true, false)
		h.target.Update([]Pod{p})
		h.probed(1, g)
		p.Terminating = true
		h.target.Update([]Pod{p})
		h.target.Close()
		if n := g.served.Load(); n != 0 {
			t.Errorf("the gate's traffic port got %d requests", n)
		}
	})
}

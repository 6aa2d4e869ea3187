package activator

import (
	"net"
	"net/http"
	"strings"
	"testing"
)

// A pod without a gate (Pod.Direct) is an app's own port: it never
// answers the gate's health check, so Kubernetes' ready condition alone
// decides, and the clock does not move in these tests unless they say so.
func TestDirectPodTakesTrafficOnItsEndpointAloneWithoutGateHealthChecks(t *testing.T) {
	h := newHarness(t, Config{})
	// Would fail every gate health check: only an app listens here.
	app := newGate(t, "app", false, nil)
	direct := func(ready bool) Pod { return Pod{Name: "app", Addr: app.addr(), Direct: true, Ready: ready} }

	h.target.Update([]Pod{direct(false)})
	held := h.goGet()
	h.queued(1)
	h.target.Update([]Pod{direct(true)})
	if r := await(t, held); r.code != http.StatusOK || r.body != "app" {
		t.Fatalf("held request once the endpoint is ready: %+v", r)
	}
	if r := h.get(); r.code != http.StatusOK || r.body != "app" {
		t.Fatalf("next request: %+v", r)
	}
	if n := app.probes.Load(); n != 0 {
		t.Errorf("%d gate health checks sent to a pod without a gate, want none", n)
	}
	h.target.Update([]Pod{direct(false)})
	held = h.goGet()
	h.queued(1) // an unready endpoint takes nothing: no gate to say otherwise
	h.target.Update([]Pod{direct(true)})
	if r := await(t, held); r.code != http.StatusOK {
		t.Fatalf("held request once ready again: %+v", r)
	}
}

func TestDirectPodThatRefusesIsOutUntilItAcceptsAConnectionAgain(t *testing.T) {
	h := newHarness(t, Config{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens: the app is restarting
	h.target.Update([]Pod{{Name: "app", Addr: addr, Direct: true, Ready: true}})
	waitFor(t, "the refused connect seen", func() bool { return h.backend("app").Probes >= 1 })
	held := h.goGet()
	h.queued(1)
	app := newGateAt(t, "app", addr)
	h.clock.Step(DefaultProbeInterval) // the next connect check is the event
	if r := await(t, held); r.code != http.StatusOK || r.body != "app" {
		t.Fatalf("held request once the port accepts: %+v", r)
	}
	if n := app.probes.Load(); n != 0 {
		t.Errorf("%d gate health checks, want none", n)
	}
}

func TestUnroutableTargetAnswers503AtOnceHeldRequestsToo(t *testing.T) {
	h := newHarness(t, Config{})
	held := h.goGet()
	h.queued(1)
	why := &UnroutableError{Reason: "cannot route Service ns/svc: no port"}
	h.target.SetUnroutable(why)
	r := await(t, held)
	if r.code != http.StatusServiceUnavailable || !strings.Contains(r.body, why.Reason) {
		t.Fatalf("held request: %+v; want 503 with the reason", r)
	}
	if r := h.get(); r.code != http.StatusServiceUnavailable || !strings.Contains(r.body, why.Reason) {
		t.Fatalf("new request: %+v; want 503 with the reason, at once", r)
	}
	if got := h.target.Unroutable(); got == nil || *got != *why {
		t.Errorf("Unroutable() = %v, want %v", got, why)
	}
	// Routable again (the Service got its port): served as usual.
	app := newGate(t, "app", false, nil)
	h.target.SetUnroutable(nil)
	h.target.Update([]Pod{{Name: "app", Addr: app.addr(), Direct: true, Ready: true}})
	if r := h.get(); r.code != http.StatusOK || r.body != "app" {
		t.Fatalf("once routable: %+v", r)
	}
}

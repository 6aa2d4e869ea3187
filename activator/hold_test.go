package activator

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The fake clock never moves in these tests unless they say so: a held
// request that comes back was released by the event, not by a timer.
func TestHeldRequestsReleasedOnEvent(t *testing.T) {
	t.Run("endpoint turns ready", func(t *testing.T) {
		h := newHarness(t, Config{})
		a := newGate(t, "a", true, nil)
		h.target.Update([]Pod{a.pod(false, false)})
		h.probed(1, a)
		var held []<-chan result
		for i := 0; i < 5; i++ {
			held = append(held, h.goGet())
		}
		h.queued(5)
		now := h.clock.Now()
		h.target.Update([]Pod{a.pod(true, false)})
		for i, ch := range held {
			if r := await(t, ch); r.code != http.StatusOK || r.body != "a" {
				t.Errorf("held request %d: %+v", i, r)
			}
		}
		if !h.clock.Now().Equal(now) {
			t.Error("the clock moved")
		}
		if got := h.backend("a").Probes; got != 1 {
			t.Errorf("%d health checks, want the 1 before holding: release must not wait for one", got)
		}
	})
	t.Run("gate answers ready", func(t *testing.T) {
		h := newHarness(t, Config{})
		a := newGate(t, "a", false, nil)
		h.target.Update([]Pod{a.pod(true, false)})
		h.probed(1, a)
		held := h.goGet()
		h.queued(1)
		a.ready.Store(true)
		h.clock.Step(DefaultProbeInterval) // the next health check is the event
		if r := await(t, held); r.code != http.StatusOK || r.body != "a" {
			t.Fatalf("held request: %+v", r)
		}
	})
	t.Run("endpoint turns ready while the gate was last seen unready: checked at once", func(t *testing.T) {
		h := newHarness(t, Config{})
		a := newGate(t, "a", false, nil)
		h.target.Update([]Pod{a.pod(false, false)})
		h.probed(1, a)
		held := h.goGet()
		h.queued(1)
		a.ready.Store(true)
		h.target.Update([]Pod{a.pod(true, false)}) // no clock step: the update asks the gate
		if r := await(t, held); r.code != http.StatusOK || r.body != "a" {
			t.Fatalf("held request: %+v", r)
		}
	})
	t.Run("new pod appears", func(t *testing.T) {
		h := newHarness(t, Config{})
		held := h.goGet()
		h.queued(1)
		a := newGate(t, "a", true, nil)
		h.target.Update([]Pod{a.pod(true, false)})
		if r := await(t, held); r.code != http.StatusOK || r.body != "a" {
			t.Fatalf("held request: %+v", r)
		}
	})
}

func TestRequestTimeout(t *testing.T) {
	const timeout = 30 * time.Second
	t.Run("held with no backend: 504 activator request timeout", func(t *testing.T) {
		h := newHarness(t, Config{RequestTimeout: timeout})
		held := h.goGet()
		h.queued(1)
		h.clock.Step(timeout - time.Millisecond)
		h.queued(1) // still held just before the deadline
		h.clock.Step(time.Millisecond)
		r := await(t, held)
		if r.code != http.StatusGatewayTimeout || r.body != "activator request timeout" {
			t.Fatalf("got %d %q, want 504 %q", r.code, r.body, "activator request timeout")
		}
		h.queued(0)
	})
	t.Run("backend does not answer in time: 504 and the upstream request is cancelled", func(t *testing.T) {
		h := newHarness(t, Config{RequestTimeout: timeout})
		blk := newBlock("a")
		a := newGate(t, "a", true, blk)
		h.target.Update([]Pod{a.pod(true, false)})
		h.probed(1, a)
		ch := h.goGet()
		<-blk.entered
		h.clock.Step(timeout)
		r := await(t, ch)
		if r.code != http.StatusGatewayTimeout || r.body != "activator request timeout" {
			t.Fatalf("got %d %q, want 504 activator request timeout", r.code, r.body)
		}
		waitFor(t, "slot freed", func() bool { return h.backend("a").InFlight == 0 })
	})
	t.Run("a started response is not cut by the timeout", func(t *testing.T) {
		h := newHarness(t, Config{RequestTimeout: timeout})
		started, finish := make(chan struct{}), make(chan struct{})
		a := newGate(t, "a", true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "first;")
			w.(http.Flusher).Flush()
			close(started)
			<-finish
			_, _ = io.WriteString(w, "second")
		}))
		h.target.Update([]Pod{a.pod(true, false)})
		h.probed(1, a)
		resp, err := h.client.Get(h.front.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		<-started
		h.clock.Step(2 * timeout)
		close(finish)
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK || string(b) != "first;second" {
			t.Fatalf("got %d %q %v, want the whole 200 stream", resp.StatusCode, b, err)
		}
	})
}

func TestQueueFull(t *testing.T) {
	h := newHarness(t, Config{QueueDepth: 2})
	held := []<-chan result{h.goGet(), h.goGet()}
	h.queued(2)
	r := h.get()
	if r.code != http.StatusServiceUnavailable || strings.TrimSpace(r.body) != "pending request queue full" {
		t.Fatalf("third request: %d %q, want 503 pending request queue full", r.code, r.body)
	}
	a := newGate(t, "a", true, nil)
	h.target.Update([]Pod{a.pod(true, false)})
	for i, ch := range held {
		if r := await(t, ch); r.code != http.StatusOK {
			t.Errorf("held request %d: %+v", i, r)
		}
	}
}

func TestCloseAnswersHeldRequests(t *testing.T) {
	h := newHarness(t, Config{})
	held := h.goGet()
	h.queued(1)
	h.target.Close()
	if r := await(t, held); r.code != http.StatusServiceUnavailable {
		t.Fatalf("held request after Close: %+v, want 503", r)
	}
}

func TestClientGoneWhileHeldLeavesTheQueue(t *testing.T) {
	h := newHarness(t, Config{})
	req, _ := http.NewRequest(http.MethodGet, h.front.URL, nil)
	ctx, cancel := contextWithCancel()
	done := make(chan error, 1)
	go func() {
		resp, err := h.client.Do(req.WithContext(ctx))
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	h.queued(1)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("request succeeded after cancel")
	}
	h.queued(0)
}

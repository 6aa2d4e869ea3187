package activator

import (
	"net/http"
	"testing"
)

func TestLeastInFlightWithConcurrencyLimit(t *testing.T) {
	h := newHarness(t, Config{ContainerConcurrency: 2})
	ba, bb := newBlock("a"), newBlock("b")
	a, b := newGate(t, "a", true, ba), newGate(t, "b", true, bb)
	h.target.Update([]Pod{a.pod(true, false), b.pod(true, false)})
	h.probed(1, a, b)

	var running []<-chan result
	for i := 0; i < 4; i++ {
		running = append(running, h.goGet())
	}
	waitFor(t, "4 requests in flight", func() bool { return a.served.Load()+b.served.Load() == 4 })
	if a.served.Load() != 2 || b.served.Load() != 2 {
		t.Fatalf("in flight a=%d b=%d, want 2 and 2", a.served.Load(), b.served.Load())
	}

	// Both pods are at capacity: the fifth waits.
	fifth := h.goGet()
	h.queued(1)

	// A slot frees on b: the fifth goes there, not to a.
	bb.release <- struct{}{}
	waitFor(t, "fifth request reached b", func() bool { return b.served.Load() == 3 })
	if a.served.Load() != 2 {
		t.Fatalf("a got %d requests, want 2: it had no free slot", a.served.Load())
	}
	h.queued(0)
	for i := 0; i < 3; i++ {
		ba.release <- struct{}{}
	}
	for i := 0; i < 2; i++ {
		bb.release <- struct{}{}
	}
	for i, ch := range append(running, fifth) {
		if r := await(t, ch); r.code != http.StatusOK {
			t.Errorf("request %d: %+v", i, r)
		}
	}
}

func TestLeastInFlightUnlimited(t *testing.T) {
	h := newHarness(t, Config{})
	ba := newBlock("a")
	a, b := newGate(t, "a", true, ba), newGate(t, "b", true, nil)
	h.target.Update([]Pod{a.pod(true, false)})
	h.probed(1, a)
	var running []<-chan result
	for i := 0; i < 3; i++ {
		running = append(running, h.goGet())
		<-ba.entered
	}
	// b joins with nothing in flight: every new request goes to it while
	// a is busier.
	h.target.Update([]Pod{a.pod(true, false), b.pod(true, false)})
	h.probed(1, b)
	for i := 0; i < 5; i++ {
		if r := h.get(); r.body != "b" {
			t.Fatalf("request %d: %+v, want b (fewer in flight)", i, r)
		}
	}
	for range running {
		ba.release <- struct{}{}
	}
	for _, ch := range running {
		await(t, ch)
	}
}

func TestIdleBackendsShareTheLoad(t *testing.T) {
	h := newHarness(t, Config{})
	a, b := newGate(t, "a", true, nil), newGate(t, "b", true, nil)
	h.target.Update([]Pod{a.pod(true, false), b.pod(true, false)})
	h.probed(1, a, b)
	for i := 0; i < 10; i++ {
		h.get()
	}
	if a.served.Load() != 5 || b.served.Load() != 5 {
		t.Fatalf("sequential requests split a=%d b=%d, want 5/5", a.served.Load(), b.served.Load())
	}
}

package proxy

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

// limitsRun is one request's limits on a fake clock.
type limitsRun struct {
	t     *testing.T
	clk   *testingclock.FakeClock
	st    *reqState
	cause chan error
}

func startLimits(t *testing.T, l Limits) *limitsRun {
	r := &limitsRun{t: t, clk: testingclock.NewFakeClock(time.Unix(1000, 0)), cause: make(chan error, 1)}
	r.st = newReqState(r.clk, l, func(c error) { r.cause <- c }, nil, nil)
	t.Cleanup(func() { r.st.end() })
	return r
}

// step moves the clock and waits until the limits looked at it, when a
// timer was due.
func (r *limitsRun) step(d time.Duration) {
	// Under the request's lock, so that a look at the limits still under
	// way sees the clock before or after the step, never in between.
	r.st.mu.Lock()
	gen, due := r.st.gen, r.st.timer != nil && r.clk.Now().Add(d).UnixNano() >= r.nextLocked()
	r.clk.Step(d)
	r.st.mu.Unlock()
	if !due {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.st.mu.Lock()
		seen := r.st.gen != gen || r.st.phase == cut
		r.st.mu.Unlock()
		if seen {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatal("the limits' timer fired but nobody looked")
		}
		time.Sleep(time.Millisecond)
	}
}

func (r *limitsRun) nextLocked() int64 {
	at, _ := r.st.nextLocked()
	return at
}

// ended is the cause the request ended with, or nil.
func (r *limitsRun) ended() error {
	select {
	case c := <-r.cause:
		return c
	default:
		return nil
	}
}

func TestLimits(t *testing.T) {
	const s = time.Second
	for _, tc := range []struct {
		name   string
		limits Limits
		// script drives the request; it returns the cause it expects the
		// request to have ended with (nil: still going).
		script func(r *limitsRun) error
		// cutStarted: the response had started when a limit cut it.
		cutStarted bool
	}{
		{"the whole-request limit ends a request without response", Limits{Request: 10 * s}, func(r *limitsRun) error {
			r.step(10*s - 1)
			if c := r.ended(); c != nil {
				r.t.Fatalf("ended early: %v", c)
			}
			r.step(1)
			return errRequestTimeout
		}, false},
		{"the whole-request limit ends a response that started", Limits{Request: 10 * s}, func(r *limitsRun) error {
			r.step(3 * s)
			r.st.responseStarted()
			r.st.wrote()
			r.step(7 * s)
			return errRequestTimeout
		}, true},
		{"the response-start limit ends a request without response", Limits{Request: 60 * s, ResponseStart: 5 * s}, func(r *limitsRun) error {
			r.step(5 * s)
			return errResponseStartTimeout
		}, false},
		{"the response-start limit is over once the response started", Limits{ResponseStart: 5 * s}, func(r *limitsRun) error {
			r.step(4 * s)
			r.st.responseStarted()
			r.step(time.Hour)
			return nil
		}, false},
		{"the idle limit counts from the arrival until the first write", Limits{Idle: 5 * s}, func(r *limitsRun) error {
			r.step(5 * s)
			return errIdleTimeout
		}, false},
		{"a write pushes the idle limit back", Limits{Idle: 5 * s}, func(r *limitsRun) error {
			r.step(4 * s)
			r.st.responseStarted()
			r.st.wrote() // at 4 s
			r.step(4 * s)
			r.st.wrote() // at 8 s
			r.step(4 * s)
			if c := r.ended(); c != nil {
				r.t.Fatalf("ended while writing: %v", c)
			}
			r.step(1 * s) // 13 s: 5 s after the last write
			return errIdleTimeout
		}, true},
		{"the earliest limit ends the request", Limits{Request: 10 * s, ResponseStart: 8 * s, Idle: 6 * s}, func(r *limitsRun) error {
			r.step(6 * s)
			return errIdleTimeout
		}, false},
		{"the response-start limit no longer counts once the response started", Limits{Request: 10 * s, ResponseStart: 2 * s, Idle: 6 * s}, func(r *limitsRun) error {
			r.st.responseStarted()
			r.st.wrote()
			r.step(5 * s)
			r.st.wrote()
			r.step(5 * s)
			return errRequestTimeout
		}, true},
		{"0 turns every limit off", Limits{}, func(r *limitsRun) error {
			r.step(24 * time.Hour)
			return nil
		}, false},
		{"a tunnel outlives the whole-request and response-start limits", Limits{Request: 10 * s, ResponseStart: 5 * s}, func(r *limitsRun) error {
			r.st.responseStarted()
			if c := r.st.hijacked(nopConn{}); c != (nopConn{}) {
				r.t.Errorf("without an idle limit the tunnel's connection is not wrapped: %T", c)
			}
			r.step(24 * time.Hour)
			return nil
		}, false},
		{"a tunnel busy either way outlives the idle limit; a silent one is cut", Limits{Request: 10 * s, Idle: 5 * s}, func(r *limitsRun) error {
			r.st.responseStarted()
			c := r.st.hijacked(nopConn{})
			r.step(4 * s)
			_, _ = c.Read(make([]byte, 1)) // from the client
			r.step(4 * s)
			_, _ = c.Write([]byte("x")) // to the client
			r.step(4 * s)
			if c := r.ended(); c != nil {
				r.t.Fatalf("a busy tunnel was cut: %v", c)
			}
			r.step(1 * s)
			return errIdleTimeout
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startLimits(t, tc.limits)
			want := tc.script(r)
			if got := r.ended(); got != want {
				t.Errorf("ended with %v, want %v", got, want)
			}
			if got := r.st.end(); got != tc.cutStarted {
				t.Errorf("cut after the start: %v, want %v", got, tc.cutStarted)
			}
		})
	}
}

func TestAnInformationalAnswerStartsTheResponse(t *testing.T) {
	r := startLimits(t, Limits{ResponseStart: 5 * time.Second})
	w := &Recorder{ResponseWriter: httptest.NewRecorder(), st: r.st}
	w.WriteHeader(http.StatusEarlyHints)
	r.step(time.Hour)
	if c := r.ended(); c != nil {
		t.Errorf("ended after a 103: %v", c)
	}
	if w.Code() != http.StatusOK {
		t.Errorf("a 103 recorded as the status: %d", w.Code())
	}
}

func TestLimitsAfterTheEnd(t *testing.T) {
	r := startLimits(t, Limits{Request: 10 * time.Second})
	r.st.end()
	r.clk.Step(time.Minute)
	if r.clk.HasWaiters() {
		t.Error("a timer is left after the request ended")
	}
	if c := r.ended(); c != nil {
		t.Errorf("a request that ended was ended again: %v", c)
	}
}

// nopConn reads and writes one byte at a time, forever.
type nopConn struct{ net.Conn }

func (nopConn) Read(p []byte) (int, error)  { return 1, nil }
func (nopConn) Write(p []byte) (int, error) { return len(p), nil }

func TestRecycledStateKeepsToTheNextRequestsLimit(t *testing.T) {
	var states reqStates
	first := make(chan error, 1)
	l := Limits{Request: 30 * time.Millisecond}
	st := states.get(clock.RealClock{}, l, func(c error) { first <- c }, nil, nil)
	timer := st.timer
	st.end() // in time: its limit must not fire any more
	states.put(st)

	next := make(chan error, 1)
	start := time.Now()
	st2 := states.get(clock.RealClock{}, l, func(c error) { next <- c }, nil, nil)
	defer st2.end()
	if st2 == st && st2.timer != timer {
		t.Error("the recycled state made a new timer")
	}
	select {
	case c := <-next:
		if c != errRequestTimeout {
			t.Errorf("cut with %v, want the request limit", c)
		}
		if d := time.Since(start); d < l.Request {
			t.Errorf("cut after %s, before its limit of %s", d, l.Request)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the next request was not cut at its limit")
	}
	select {
	case c := <-first:
		t.Errorf("the ended request was cut too (%v)", c)
	default:
	}
}

package proxy

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// Limits are a request's time limits, queue-proxy's three (Knative
// Serving v0.50.0, its timeout handler); 0 turns a limit off.
//
//   - Request (REVISION_TIMEOUT_SECONDS) bounds the whole request,
//     queueing, ride-through and the response's streaming included;
//   - ResponseStart (REVISION_RESPONSE_START_TIMEOUT_SECONDS) bounds the
//     time until the response's headers pass;
//   - Idle (REVISION_IDLE_TIMEOUT_SECONDS) bounds the time without a
//     write to the client, counted from the request's arrival until the
//     first one.
//
// A limit that ends a request before its response started answers 504
// "request timeout". After the start, the body so far is followed by
// "request timeout" and the response is cut short: queue-proxy ends a
// chunked one as if it were whole, the gate as cut (the connection closed
// before the last chunk, an HTTP/2 stream reset), so a client can tell a
// cut response from a whole one. An upgraded connection (a websocket)
// answered 101 is relayed until the idle limit finds it silent in both
// directions: queue-proxy sees neither the 101 nor the tunnel's bytes
// and cuts every tunnel at the first of its three limits, however busy.
type Limits struct {
	Request, ResponseStart, Idle time.Duration
}

func (l Limits) any() bool { return l.Request > 0 || l.ResponseStart > 0 || l.Idle > 0 }

// The causes a limit ends a request with; each is answered "request
// timeout", queue-proxy's text for all three.
var (
	errRequestTimeout       = errors.New("request timeout")
	errResponseStartTimeout = fmt.Errorf("response start %w", errRequestTimeout)
	errIdleTimeout          = fmt.Errorf("idle %w", errRequestTimeout)
)

// phase is where a request's response is.
type phase uint8

const (
	waiting phase = iota // no response yet
	started              // the response's headers passed
	tunnel               // an upgraded connection is relayed
	cut                  // a limit ended the request
	done                 // Serve returned
)

// reqState is what the proxy's hooks and the limits' timer need of a
// request. One timer watches the earliest limit; when it fires the
// limits are looked at again (a write may have pushed the idle limit
// back), as queue-proxy's idle timer does.
type reqState struct {
	clock  clock.WithDelayedExecution
	limits Limits
	start  int64 // UnixNano of the arrival
	cancel func(cause error)
	// log, when set, is told which limit ended request r.
	log *slog.Logger
	r   *http.Request
	// lastWrite is the UnixNano of the last write to the client (of a
	// byte either way through a tunnel); the arrival before any. Kept
	// only with an idle limit.
	lastWrite atomic.Int64

	mu         sync.Mutex
	phase      phase
	cutStarted bool // cut after the response started
	timer      clock.Timer
	armed      bool   // the timer is set
	gen        uint64 // counts the looks at the limits (tests wait on it)
	// reuse: the timer is set again rather than made anew (the real
	// clock's; a fake clock's timer cannot fire twice).
	reuse bool
	// tunneled: a tunnelConn refers to this state.
	tunneled bool
	// inform gets the serving container's 1xx answers while serveDirect
	// waits for its final one (ReverseProxy's client trace otherwise);
	// only the request's goroutine uses it.
	inform *Recorder
}

func (st *reqState) informTo(w *Recorder) { st.inform = w }

// reqStates recycles a Proxy's request states with their timers: a
// request that ends in time, as nearly all do, then costs no allocation
// for its limits.
type reqStates struct{ pool sync.Pool }

func (p *reqStates) get(clk clock.WithDelayedExecution, l Limits, cancel func(error), log *slog.Logger, r *http.Request) *reqState {
	st, _ := p.pool.Get().(*reqState)
	if st == nil {
		_, real := clk.(clock.RealClock)
		st = &reqState{reuse: real}
	}
	st.init(clk, l, cancel, log, r)
	return st
}

// put takes st back once its request ended, unless an upgraded
// connection (whose relay may outlive the request by a moment) still
// refers to it.
func (p *reqStates) put(st *reqState) {
	st.mu.Lock()
	tunneled := st.tunneled
	st.cancel, st.log, st.r, st.inform = nil, nil, nil, nil
	st.mu.Unlock()
	if !tunneled {
		p.pool.Put(st)
	}
}

func newReqState(clk clock.WithDelayedExecution, l Limits, cancel func(error), log *slog.Logger, r *http.Request) *reqState {
	st := &reqState{}
	st.init(clk, l, cancel, log, r)
	return st
}

func (st *reqState) init(clk clock.WithDelayedExecution, l Limits, cancel func(error), log *slog.Logger, r *http.Request) {
	st.clock, st.limits, st.cancel, st.log, st.r = clk, l, cancel, log, r
	st.start = clk.Now().UnixNano()
	st.lastWrite.Store(st.start)
	st.mu.Lock()
	st.phase, st.cutStarted = waiting, false
	st.armLocked(st.start)
	st.mu.Unlock()
}

// next is the earliest limit still to come and its cause; 0 for none.
func (st *reqState) nextLocked() (at int64, cause error) {
	consider := func(t int64, c error) {
		if at == 0 || t < at {
			at, cause = t, c
		}
	}
	l := st.limits
	if l.Idle > 0 {
		consider(st.lastWrite.Load()+int64(l.Idle), errIdleTimeout)
	}
	if st.phase == tunnel {
		return at, cause
	}
	if l.Request > 0 {
		consider(st.start+int64(l.Request), errRequestTimeout)
	}
	if l.ResponseStart > 0 && st.phase == waiting {
		consider(st.start+int64(l.ResponseStart), errResponseStartTimeout)
	}
	return at, cause
}

// armLocked sets the timer for the earliest limit after now, ending the
// request if one has passed.
func (st *reqState) armLocked(now int64) {
	if st.phase >= cut {
		return
	}
	st.gen++
	at, cause := st.nextLocked()
	switch {
	case at == 0:
		st.stopTimerLocked()
	case at > now:
		st.setTimerLocked(time.Duration(at - now))
	default:
		st.cutStarted = st.phase == started
		st.phase = cut
		st.cancel(cause)
		if st.log != nil {
			st.log.Warn("request timeout", "limit", limitEnv(cause), "method", st.r.Method, "path", st.r.URL.Path)
		}
	}
}

// setTimerLocked sets the timer to fire in d.
func (st *reqState) setTimerLocked(d time.Duration) {
	st.armed = true
	if st.timer != nil && st.reuse {
		st.timer.Reset(d)
		return
	}
	// The fake clock runs AfterFunc callbacks under its lock, so the
	// callback only starts the look at the clock.
	st.timer = st.clock.AfterFunc(d, st.fired)
}

func (st *reqState) stopTimerLocked() {
	if st.armed {
		st.timer.Stop()
		st.armed = false
	}
	if !st.reuse {
		st.timer = nil
	}
}

func (st *reqState) fired() { go st.check() }

// check is the timer's: a limit passed, or a write moved it. A late
// callback of a timer set again since (or of the request this state
// served before) finds the limits not due and sets the timer again for
// the earliest one.
func (st *reqState) check() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.armed = false
	// The time is read under the lock: read before it, it could be older
	// than the clock by the wait, and the timer set from it would fire
	// that much later than the limit.
	st.armLocked(st.clock.Now().UnixNano())
}

// responseStarted is the response's headers passing; false if a limit
// ended the request first.
func (st *reqState) responseStarted() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.phase != waiting {
		return st.phase != cut
	}
	st.phase = started
	return true
}

// wrote notes a write to the client, for the idle limit.
func (st *reqState) wrote() {
	if st.limits.Idle > 0 {
		st.lastWrite.Store(st.clock.Now().UnixNano())
	}
}

// hijacked turns the request into a tunnel: only the idle limit applies
// from now on, counting bytes either way.
func (st *reqState) hijacked(conn net.Conn) net.Conn {
	now := st.clock.Now().UnixNano()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.phase != started && st.phase != waiting {
		return conn
	}
	st.phase = tunnel
	st.gen++
	st.stopTimerLocked()
	if st.limits.Idle <= 0 {
		return conn
	}
	st.lastWrite.Store(now)
	st.armLocked(now)
	st.tunneled = true
	return &tunnelConn{Conn: conn, st: st}
}

// end is Serve returning: the timer stops. It reports whether a limit cut
// the response after it started (its end is then written cut short).
func (st *reqState) end() (cutStarted bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.phase = done
	st.gen++
	st.stopTimerLocked()
	return st.cutStarted
}

// tunnelConn is the client's side of an upgraded connection with an idle
// limit: every byte either way is activity.
type tunnelConn struct {
	net.Conn
	st *reqState
}

func (c *tunnelConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.st.lastWrite.Store(c.st.clock.Now().UnixNano())
	}
	return n, err
}

func (c *tunnelConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.st.lastWrite.Store(c.st.clock.Now().UnixNano())
	}
	return n, err
}

// limitEnv names the variable of the limit a cause stands for.
func limitEnv(cause error) string {
	switch cause {
	case errResponseStartTimeout:
		return "REVISION_RESPONSE_START_TIMEOUT_SECONDS"
	case errIdleTimeout:
		return "REVISION_IDLE_TIMEOUT_SECONDS"
	}
	return "REVISION_TIMEOUT_SECONDS"
}

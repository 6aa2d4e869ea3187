package drain

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/podgate/podgate/internal/brokenbuild"
)

// Drainer decides when a terminating gate may exit: once no request has
// arrived for the quiet period, counted from the later of the drain's start
// and the last arrival (each request restarts it, as queue-proxy's drain
// does), and no request is in flight. Health checks are not requests here.
//
// The quiet period covers routers that may still send traffic after the
// pod started terminating. When the pod's only router confirms that it no
// longer does (Unrouted), there is nothing left to wait for: the drain
// ends as soon as no request is in flight — unless a request arrived after
// the confirmation, which proves another way in, and the quiet period
// rules again.
//
// Arrive and Leave are the hot path: three and two atomic operations.
type Drainer struct {
	clock clock.Clock
	quiet time.Duration

	inflight    atomic.Int64
	arrivals    atomic.Int64
	lastArrival atomic.Int64 // UnixNano of the clock
	draining    atomic.Bool
	idle        chan struct{} // a Leave that emptied a draining gate
	// unrouted is the arrival count at the only router's confirmation,
	// -1 before one.
	unrouted atomic.Int64
	wake     chan struct{} // the confirmation came
	early    atomic.Bool   // the drain ended on the confirmation

	mu    sync.Mutex
	start time.Time
	done  chan struct{}
	stop  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

// New returns a Drainer with the given quiet period; a nil clk is the
// real clock.
func New(clk clock.Clock, quiet time.Duration) *Drainer {
	if clk == nil {
		clk = clock.RealClock{}
	}
	d := &Drainer{
		clock: clk,
		quiet: quiet,
		idle:  make(chan struct{}, 1),
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
		stop:  make(chan struct{}),
	}
	d.unrouted.Store(-1)
	return d
}

// Arrive records a request's arrival; call Leave when it is over.
func (d *Drainer) Arrive() {
	d.inflight.Add(1)
	d.arrivals.Add(1)
	d.lastArrival.Store(d.clock.Now().UnixNano())
}

// Unrouted records the confirmation of the pod's only router that it
// sends no request here any more and has none in flight. Only the first
// confirmation counts: a request that arrives after it came another way,
// and a later confirmation by the same router cannot speak for that way.
// It reports whether this confirmation was the first.
func (d *Drainer) Unrouted() bool {
	if !d.unrouted.CompareAndSwap(-1, d.arrivals.Load()) {
		return false
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
	return true
}

// mayEndEarly: the only router confirmed, nothing arrived since, nothing
// is in flight.
func (d *Drainer) mayEndEarly() bool {
	if brokenbuild.Has(brokenbuild.NoEarlyDrain) {
		return false
	}
	u := d.unrouted.Load()
	return u >= 0 && d.arrivals.Load() == u && d.inflight.Load() == 0
}

// EndedEarly reports whether a completed drain ended on the only router's
// confirmation rather than after the quiet period.
func (d *Drainer) EndedEarly() bool { return d.early.Load() }

// Remaining is how much of the quiet period is left (0 once it has
// passed) and how many requests are in flight, for the drain's progress
// reports.
func (d *Drainer) Remaining() (quiet time.Duration, inFlight int64) {
	d.mu.Lock()
	start := d.start
	d.mu.Unlock()
	if left := d.deadline(start).Sub(d.clock.Now()); left > 0 {
		quiet = left
	}
	return quiet, d.inflight.Load()
}

// deadline is when the quiet period ends, for a drain started at start.
func (d *Drainer) deadline(start time.Time) time.Time {
	deadline := start
	if last := time.Unix(0, d.lastArrival.Load()); last.After(deadline) {
		deadline = last
	}
	return deadline.Add(d.quiet)
}

// Leave records the end of a request.
func (d *Drainer) Leave() {
	if d.inflight.Add(-1) == 0 && d.draining.Load() {
		select {
		case d.idle <- struct{}{}:
		default:
		}
	}
}

// InFlight is the number of requests between Arrive and Leave.
func (d *Drainer) InFlight() int64 { return d.inflight.Load() }

// Draining reports whether Drain was called.
func (d *Drainer) Draining() bool { return d.draining.Load() }

// Done is closed once the drain is complete.
func (d *Drainer) Done() <-chan struct{} { return d.done }

// Drain starts the drain; later calls do nothing.
func (d *Drainer) Drain() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining.Load() {
		return
	}
	d.start = d.clock.Now()
	d.draining.Store(true)
	d.wg.Add(1)
	go d.run()
}

// Stop ends the drain's goroutine (the drain never completes) and waits
// for it.
func (d *Drainer) Stop() {
	d.once.Do(func() { close(d.stop) })
	d.wg.Wait()
}

func (d *Drainer) run() {
	defer d.wg.Done()
	for {
		if d.mayEndEarly() {
			d.early.Store(true)
			close(d.done)
			return
		}
		d.mu.Lock()
		start := d.start
		d.mu.Unlock()
		if wait := d.deadline(start).Sub(d.clock.Now()); wait > 0 {
			t := d.clock.NewTimer(wait)
			// A clock that moved between reading it and setting the
			// timer set the timer late: a fake clock stepped past the
			// deadline meanwhile would never fire it. Look again.
			if !d.deadline(start).After(d.clock.Now()) {
				t.Stop()
				continue
			}
			select {
			case <-t.C():
			case <-d.wake:
				t.Stop()
			case <-d.idle:
				// The last request left: with a confirmation, that may
				// be the end.
				t.Stop()
			case <-d.stop:
				t.Stop()
				return
			}
			continue
		}
		if d.inflight.Load() > 0 {
			select {
			case <-d.idle:
			case <-d.wake:
			case <-d.stop:
				return
			}
			continue
		}
		close(d.done)
		return
	}
}

package gate

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// Drainer decides when a terminating gate may exit: once no request has
// arrived for the quiet period, counted from the later of the drain's start
// and the last arrival (each request restarts it, as queue-proxy's drain
// does), and no request is in flight. Health checks are not requests here.
//
// Arrive and Leave are the hot path: two atomic operations each.
type Drainer struct {
	clock clock.Clock
	quiet time.Duration

	inflight    atomic.Int64
	lastArrival atomic.Int64 // UnixNano of the clock
	draining    atomic.Bool
	idle        chan struct{} // a Leave that emptied a draining gate

	mu    sync.Mutex
	start time.Time
	done  chan struct{}
	stop  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

// NewDrainer returns a Drainer with the given quiet period.
func NewDrainer(clk clock.Clock, quiet time.Duration) *Drainer {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Drainer{
		clock: clk,
		quiet: quiet,
		idle:  make(chan struct{}, 1),
		done:  make(chan struct{}),
		stop:  make(chan struct{}),
	}
}

// Arrive records a request's arrival; call Leave when it is over.
func (d *Drainer) Arrive() {
	d.inflight.Add(1)
	d.lastArrival.Store(d.clock.Now().UnixNano())
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
		d.mu.Lock()
		start := d.start
		d.mu.Unlock()
		deadline := start
		if last := time.Unix(0, d.lastArrival.Load()); last.After(deadline) {
			deadline = last
		}
		deadline = deadline.Add(d.quiet)
		if wait := deadline.Sub(d.clock.Now()); wait > 0 {
			t := d.clock.NewTimer(wait)
			select {
			case <-t.C():
			case <-d.stop:
				t.Stop()
				return
			}
			continue
		}
		if d.inflight.Load() > 0 {
			select {
			case <-d.idle:
			case <-d.stop:
				return
			}
			continue
		}
		close(d.done)
		return
	}
}

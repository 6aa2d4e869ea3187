package prober

import "sync"

// dispatcher delivers Updates in order on its own goroutine through an
// unbounded queue, so a slow or re-entrant callback can never block a
// worker (workers only append under a lock).
type dispatcher struct {
	fn   func(Update)
	wake chan struct{}
	done chan struct{}

	mu      sync.Mutex
	queue   []Update
	pending int // pushed but not yet returned from fn; tests wait for 0
	closed  bool
}

func newDispatcher(fn func(Update)) *dispatcher {
	if fn == nil {
		fn = func(Update) {}
	}
	d := &dispatcher{fn: fn, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go d.run()
	return d
}

func (d *dispatcher) push(u Update) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.queue = append(d.queue, u)
	d.pending++
	d.mu.Unlock()
	d.signal()
}

func (d *dispatcher) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *dispatcher) run() {
	defer close(d.done)
	for {
		d.mu.Lock()
		batch := d.queue
		d.queue = nil
		closed := d.closed
		d.mu.Unlock()
		if len(batch) == 0 {
			if closed {
				return
			}
			<-d.wake
			continue
		}
		for _, u := range batch {
			d.fn(u)
			d.mu.Lock()
			d.pending--
			d.mu.Unlock()
		}
	}
}

// close delivers what is queued, then ends the goroutine and waits for it.
func (d *dispatcher) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.signal()
	<-d.done
}

func (d *dispatcher) idle() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pending == 0
}

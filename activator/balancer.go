package activator

import "container/list"

// balancer picks backends by least in-flight requests, within a per-pod
// capacity, and keeps the requests that found none in a bounded FIFO. It
// holds no goroutines and no clock: the target calls it under its lock
// and every change that may free a slot calls dispatch, so a held request
// is released by the event itself, never by polling.
type balancer struct {
	capacity int // per backend; 0 is unlimited
	depth    int // most requests held
	backends []*backend
	// next rotates the starting point of the scan, so ties between
	// equally loaded backends are spread instead of always taking the
	// first.
	next    int
	waiters list.List // of *waiter
}

// waiter is a held request. ch receives the backend it was given (with a
// slot already taken); elem is nil once it left the queue.
type waiter struct {
	ch   chan *backend
	elem *list.Element
}

// pick returns the usable backend with the fewest requests in flight that
// has a free slot, or nil.
func (q *balancer) pick() *backend {
	var best *backend
	bestAt := 0
	n := len(q.backends)
	for i := 0; i < n; i++ {
		at := (q.next + i) % n
		b := q.backends[at]
		if !b.usable() || (q.capacity > 0 && b.inflight >= q.capacity) {
			continue
		}
		if best == nil || b.inflight < best.inflight {
			best, bestAt = b, at
			if b.inflight == 0 {
				break
			}
		}
	}
	if best != nil {
		q.next = bestAt + 1
	}
	return best
}

// tryAcquire takes a slot at once unless requests are already waiting
// (they go first) and ahead is false.
func (q *balancer) tryAcquire(ahead bool) *backend {
	if !ahead && q.waiters.Len() > 0 {
		return nil
	}
	b := q.pick()
	if b != nil {
		b.inflight++
	}
	return b
}

// hold queues a request; a request held again after a failed connect goes
// to the front (it waited already) and is never refused for depth.
func (q *balancer) hold(ahead bool) *waiter {
	if !ahead && q.waiters.Len() >= q.depth {
		return nil
	}
	w := &waiter{ch: make(chan *backend, 1)}
	if ahead {
		w.elem = q.waiters.PushFront(w)
	} else {
		w.elem = q.waiters.PushBack(w)
	}
	return w
}

// leave takes a waiter out of the queue; false if it was given a backend
// meanwhile (which is then in w.ch).
func (q *balancer) leave(w *waiter) bool {
	if w.elem == nil {
		return false
	}
	q.waiters.Remove(w.elem)
	w.elem = nil
	return true
}

// dispatch hands free slots to held requests in arrival order.
func (q *balancer) dispatch() {
	for q.waiters.Len() > 0 {
		b := q.pick()
		if b == nil {
			return
		}
		w := q.waiters.Remove(q.waiters.Front()).(*waiter)
		w.elem = nil
		b.inflight++
		w.ch <- b
	}
}

// drop takes b out of the candidates.
func (q *balancer) drop(b *backend) {
	for i, x := range q.backends {
		if x == b {
			q.backends = append(q.backends[:i], q.backends[i+1:]...)
			return
		}
	}
}

// wakeAll empties the queue, giving every waiter nil (the target closed).
func (q *balancer) wakeAll() {
	for q.waiters.Len() > 0 {
		w := q.waiters.Remove(q.waiters.Front()).(*waiter)
		w.elem = nil
		w.ch <- nil
	}
}

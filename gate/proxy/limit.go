package proxy

import (
	"context"
	"errors"
	"sync/atomic"
)

// errQueueFull is queue-proxy's answer when the queue is full (503).
var errQueueFull = errors.New("pending request queue full")

// Limiter enforces CONTAINER_CONCURRENCY: at most cap(slots) requests in
// the serving container at once; the others wait their turn in arrival
// order (a channel's senders queue FIFO), up to maxQueue of them, as
// queue-proxy's breaker does (10 × the concurrency).
type Limiter struct {
	slots    chan struct{}
	maxQueue int64
	queued   atomic.Int64
}

// NewLimiter returns nil for 0 (unlimited).
func NewLimiter(concurrency int) *Limiter {
	if concurrency <= 0 {
		return nil
	}
	return &Limiter{slots: make(chan struct{}, concurrency), maxQueue: 10 * int64(concurrency)}
}

// acquire takes a slot, waiting in the queue if none is free, until ctx
// ends. Release the slot with release.
func (l *Limiter) acquire(ctx context.Context) error {
	select {
	case l.slots <- struct{}{}:
		return nil
	default:
	}
	if l.queued.Add(1) > l.maxQueue {
		l.queued.Add(-1)
		return errQueueFull
	}
	defer l.queued.Add(-1)
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (l *Limiter) release() { <-l.slots }

// Occupancy is the number of requests waiting for a slot or holding one:
// what queue-proxy's breaker calls in flight (0 for a nil Limiter).
func (l *Limiter) Occupancy() int64 {
	if l == nil {
		return 0
	}
	return l.queued.Load() + int64(len(l.slots))
}

// Depth is the number of requests waiting for a slot (0 for a nil
// Limiter).
func (l *Limiter) Depth() int64 {
	if l == nil {
		return 0
	}
	return l.queued.Load()
}

package gate

import (
	"context"
	"errors"
	"sync/atomic"
)

// errQueueFull is queue-proxy's answer when the queue is full (503).
var errQueueFull = errors.New("pending request queue full")

// limiter enforces CONTAINER_CONCURRENCY: at most cap(slots) requests in
// the serving container at once; the others wait their turn in arrival
// order (a channel's senders queue FIFO), up to maxQueue of them, as
// queue-proxy's breaker does (10 × the concurrency).
type limiter struct {
	slots    chan struct{}
	maxQueue int64
	queued   atomic.Int64
}

// newLimiter returns nil for 0 (unlimited).
func newLimiter(concurrency int) *limiter {
	if concurrency <= 0 {
		return nil
	}
	return &limiter{slots: make(chan struct{}, concurrency), maxQueue: 10 * int64(concurrency)}
}

// acquire takes a slot, waiting in the queue if none is free, until ctx
// ends. Release the slot with release.
func (l *limiter) acquire(ctx context.Context) error {
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

func (l *limiter) release() { <-l.slots }

// depth is the number of requests waiting for a slot.
func (l *limiter) depth() int64 {
	if l == nil {
		return 0
	}
	return l.queued.Load()
}

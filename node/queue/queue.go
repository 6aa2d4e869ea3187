package queue

import "sync"

// Queue is an unbounded FIFO. Push never blocks; the consumer waits on
// Wake and then takes everything queued at once.
type Queue[T any] struct {
	mu    sync.Mutex
	items []T
	wake  chan struct{}
}

// New returns an empty queue.
func New[T any]() *Queue[T] { return &Queue[T]{wake: make(chan struct{}, 1)} }

// Push appends v and wakes the consumer.
func (q *Queue[T]) Push(v T) {
	q.mu.Lock()
	q.items = append(q.items, v)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Wake receives once after one or more Pushes: a Push while the consumer
// is busy is never lost, several coalesce into one wake-up.
func (q *Queue[T]) Wake() <-chan struct{} { return q.wake }

// Take returns everything queued, in order, or nil.
func (q *Queue[T]) Take() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
}

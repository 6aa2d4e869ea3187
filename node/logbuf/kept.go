package logbuf

import "sync"

// Kept is one container's output as `kubectl logs` reads it: the current
// instance's Buffer and, for --previous, the one before it, as the
// kubelet keeps the last terminated instance's log. The pod worker starts
// instances while the API reads: it is safe for concurrent use. The zero
// value holds no instance yet.
type Kept struct {
	mu        sync.Mutex
	cur, prev *Buffer
}

// Next keeps a new Buffer of limit bytes (0: DefaultBytes) for a new
// instance and returns it; the current one becomes the previous one.
func (k *Kept) Next(limit int) *Buffer {
	b := New(limit)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.prev, k.cur = k.cur, b
	return b
}

// Get is the current instance's Buffer, or with previous the one before
// it; nil when there is none.
func (k *Kept) Get(previous bool) *Buffer {
	k.mu.Lock()
	defer k.mu.Unlock()
	if previous {
		return k.prev
	}
	return k.cur
}

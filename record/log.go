package record

import (
	"sync"
)

// Log keeps the latest facts in memory for a live view: a Sink whose
// readers ask for what came after the last fact they saw and can wait for
// more.
type Log struct {
	mu      sync.Mutex
	facts   []Fact
	first   int // sequence number of facts[0]
	max     int
	changed chan struct{}
}

// NewLog keeps at most max facts (the oldest are forgotten).
func NewLog(max int) *Log {
	if max < 1 {
		max = 1
	}
	return &Log{max: max, changed: make(chan struct{})}
}

// Record appends f and wakes the waiting readers.
func (l *Log) Record(f Fact) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.facts = append(l.facts, f)
	if over := len(l.facts) - l.max; over > 0 {
		l.facts = append(l.facts[:0:0], l.facts[over:]...)
		l.first += over
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

// Since returns the facts with sequence numbers from seq on (those
// forgotten are skipped), the sequence number to ask for next, and a
// channel closed when a fact is added.
func (l *Log) Since(seq int) (facts []Fact, next int, changed <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq < l.first {
		seq = l.first
	}
	end := l.first + len(l.facts)
	if seq > end {
		seq = end
	}
	return append([]Fact(nil), l.facts[seq-l.first:]...), end, l.changed
}

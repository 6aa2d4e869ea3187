package lab

import (
	"bytes"
	"strconv"
	"sync"
)

// maxOutput bounds what a Process keeps of each of its streams: container
// output of a long scenario (probe logs every second per container) must
// not grow without limit. The newest output is kept; failure logs need
// the end more than the beginning.
const maxOutput = 8 << 20

// Output is a concurrency-safe, size-capped copy of a process's stream
// (a Process's, a cluster's). It is an io.Writer so exec.Cmd copies into
// it itself.
type Output struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	dropped int
	changed chan struct{} // closed and replaced on every write
}

// NewOutput is an empty Output.
func NewOutput() *Output { return &Output{changed: make(chan struct{})} }

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	if o.buf.Len() > maxOutput {
		// Drop the older half at once, so trimming is rare.
		n := o.buf.Len() - maxOutput/2
		o.buf.Next(n)
		o.dropped += n
		// Next leaves the bytes in place; copy so the buffer can shrink.
		rest := append([]byte(nil), o.buf.Bytes()...)
		o.buf.Reset()
		o.buf.Write(rest)
	}
	close(o.changed)
	o.changed = make(chan struct{})
	return len(p), nil
}

// String is everything kept so far, noting how much was dropped.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dropped > 0 {
		return "[… " + strconv.Itoa(o.dropped) + " earlier bytes dropped …]\n" + o.buf.String()
	}
	return o.buf.String()
}

// Snapshot returns the text kept and a channel closed on the next write.
func (o *Output) Snapshot() (string, <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String(), o.changed
}

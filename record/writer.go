package record

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// Sink takes facts as they are learned. Record must not block for long:
// the node agent's probe workers and the front door's requests call it.
type Sink interface {
	Record(Fact)
}

// Discard is a Sink that keeps nothing: what a component records into
// when no recording was asked for.
var Discard Sink = discard{}

type discard struct{}

func (discard) Record(Fact) {}

// Tee records every fact into each of sinks, in order.
func Tee(sinks ...Sink) Sink { return tee(sinks) }

type tee []Sink

func (t tee) Record(f Fact) {
	for _, s := range t {
		s.Record(f)
	}
}

// flushEvery bounds how long a fact waits in the writer's buffer: a
// recording read while podgate runs (tail -f) lags at most this much.
const flushEvery = 200 * time.Millisecond

// Writer writes a recording: the header, then one line per fact, within
// a size bound. It is safe for concurrent use. Close flushes; until then
// the buffer is flushed every 200 ms, so a podgate killed without a
// chance to close loses at most that much.
type Writer struct {
	mu        sync.Mutex
	w         *bufio.Writer
	limit     int64
	written   int64
	truncated bool
	closed    bool
	err       error
	onTrunc   func()
	stop      chan struct{}
	done      chan struct{}
}

// truncationReserve is room kept under the bound for the truncated line.
const truncationReserve = 256

// NewWriter writes h (its Format and Version filled in) to w and returns a
// Writer for the facts. limit bounds the recording's size in bytes, 0
// meaning no bound; a bound must leave room for the header and the line
// saying it was hit.
func NewWriter(w io.Writer, h Header, limit int64) (*Writer, error) {
	if limit < 0 {
		return nil, fmt.Errorf("recording size limit %d: must not be negative", limit)
	}
	h.Format, h.Version, h.Limit = FormatName, Version, limit
	if h.Started.IsZero() {
		h.Started = time.Now()
	}
	line, err := json.Marshal(Fact{Time: h.Started, Kind: KindHeader, Header: &h})
	if err != nil {
		return nil, fmt.Errorf("recording header: %w", err)
	}
	if limit > 0 && int64(len(line))+1+truncationReserve > limit {
		return nil, fmt.Errorf("recording size limit %d bytes: too small for even the header (%d bytes)", limit, len(line)+1+truncationReserve)
	}
	rw := &Writer{w: bufio.NewWriterSize(w, 64<<10), limit: limit, stop: make(chan struct{}), done: make(chan struct{})}
	rw.writeLine(line)
	if err := rw.w.Flush(); err != nil {
		return nil, fmt.Errorf("writing the recording: %w", err)
	}
	go rw.flushLoop()
	return rw, nil
}

func (rw *Writer) flushLoop() {
	defer close(rw.done)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-rw.stop:
			return
		case <-t.C:
			rw.mu.Lock()
			if rw.err == nil {
				rw.err = rw.w.Flush()
			}
			rw.mu.Unlock()
		}
	}
}

// Record writes f, or drops it once the bound was hit or the writer
// closed. The first fact that would cross the bound is replaced by a
// truncated line; Truncated reports it.
func (rw *Writer) Record(f Fact) {
	line, err := json.Marshal(f)
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.closed || rw.truncated || rw.err != nil {
		return
	}
	if err != nil {
		rw.err = fmt.Errorf("recording a %s fact: %w", f.Kind, err)
		return
	}
	if rw.limit > 0 && rw.written+int64(len(line))+1 > rw.limit-truncationReserve {
		rw.truncated = true
		msg := fmt.Sprintf("recording reached its size limit of %d bytes; later facts were dropped", rw.limit)
		t, _ := json.Marshal(Fact{Time: f.Time, Kind: KindTruncated, Truncated: &Truncated{Limit: rw.limit, Message: msg}})
		rw.writeLine(t)
		if rw.onTrunc != nil {
			// Once, on the goroutine of the fact that crossed the bound;
			// outside the lock would let a second fact race ahead of the
			// message, and the callback only prints a line.
			rw.onTrunc()
		}
		return
	}
	rw.writeLine(line)
}

// OnTruncate sets fn to be called once, when the size bound is hit (with
// the writer's lock held: fn must not call the Writer). podgate prints
// its message to stderr so.
func (rw *Writer) OnTruncate(fn func()) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.onTrunc = fn
}

func (rw *Writer) writeLine(line []byte) {
	if _, err := rw.w.Write(line); err != nil {
		rw.err = err
		return
	}
	if err := rw.w.WriteByte('\n'); err != nil {
		rw.err = err
		return
	}
	rw.written += int64(len(line)) + 1
}

// Truncated reports whether the size bound was hit.
func (rw *Writer) Truncated() bool {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.truncated
}

// Written is the recording's size so far in bytes.
func (rw *Writer) Written() int64 {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.written
}

// Close flushes what is buffered and stops the writer; later facts are
// dropped. It returns the first error writing met. It does not close the
// underlying writer.
func (rw *Writer) Close() error {
	rw.mu.Lock()
	if rw.closed {
		rw.mu.Unlock()
		return rw.err
	}
	rw.closed = true
	rw.mu.Unlock()
	close(rw.stop)
	<-rw.done
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.err == nil {
		rw.err = rw.w.Flush()
	}
	if rw.err != nil {
		return fmt.Errorf("writing the recording: %w", rw.err)
	}
	return nil
}

package runtime

import (
	"bytes"
	"context"
	"io"
	"sync"
	"time"
)

// DefaultLogBytes is how much output the agent keeps per container
// instance (the current and the previous one), oldest lines dropped first.
const DefaultLogBytes = 1 << 20

// maxLineBytes cuts a line that never ends, so one runaway write cannot
// hold the buffer or podgate's terminal hostage.
const maxLineBytes = 64 << 10

type logLine struct {
	at   time.Time
	text []byte // with its trailing newline
}

// logBuffer is the output of one container instance: a bounded list of
// lines with absolute sequence numbers, so a following reader can tell
// what it has missed when old lines were dropped.
type logBuffer struct {
	limit int

	mu     sync.Mutex
	lines  []logLine
	first  uint64 // sequence number of lines[0]
	bytes  int
	ended  bool
	notify chan struct{} // closed and replaced on every change
}

func newLogBuffer(limit int) *logBuffer {
	if limit <= 0 {
		limit = DefaultLogBytes
	}
	return &logBuffer{limit: limit, notify: make(chan struct{})}
}

func (b *logBuffer) add(at time.Time, text []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, logLine{at: at, text: text})
	b.bytes += len(text)
	drop := 0
	for b.bytes > b.limit && drop < len(b.lines)-1 {
		b.bytes -= len(b.lines[drop].text)
		drop++
	}
	if drop > 0 {
		clear(b.lines[:drop])
		b.lines = b.lines[drop:]
		b.first += uint64(drop)
	}
	b.wake()
}

// end marks the instance as exited: following readers stop at the end.
func (b *logBuffer) end() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended = true
	b.wake()
}

func (b *logBuffer) wake() {
	close(b.notify)
	b.notify = make(chan struct{})
}

// since returns the lines from sequence number seq on (clamped to what is
// kept), the next sequence number, whether the instance ended, and a
// channel closed on the next change.
func (b *logBuffer) since(seq uint64) ([]logLine, uint64, bool, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if seq < b.first {
		seq = b.first
	}
	i := int(seq - b.first)
	out := append([]logLine(nil), b.lines[i:]...)
	return out, b.first + uint64(len(b.lines)), b.ended, b.notify
}

// lineWriter splits one stream of a container into lines, prefixes each
// for podgate's terminal and keeps it in the buffer.
type lineWriter struct {
	prefix string
	out    *sharedOutput
	buf    *logBuffer
	now    func() time.Time

	mu      sync.Mutex
	partial []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.partial = append(w.partial, p...)
			if len(w.partial) >= maxLineBytes {
				w.emit(append(w.partial, '\n'))
				w.partial = nil
			}
			break
		}
		line := append(w.partial, p[:i+1]...)
		w.partial = nil
		w.emit(line)
		p = p[i+1:]
	}
	return n, nil
}

// flush emits an unterminated last line (the process exited mid-line).
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 {
		w.emit(append(w.partial, '\n'))
		w.partial = nil
	}
}

func (w *lineWriter) emit(line []byte) {
	kept := bytes.Clone(line)
	w.buf.add(w.now(), kept)
	w.out.writeLine(w.prefix, kept)
}

// sharedOutput is podgate's stdout, shared by every container: whole lines
// only, so outputs never interleave mid-line.
type sharedOutput struct {
	mu sync.Mutex
	w  io.Writer
}

func (o *sharedOutput) writeLine(prefix string, line []byte) {
	if o == nil || o.w == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	b := make([]byte, 0, len(prefix)+len(line))
	b = append(append(b, prefix...), line...)
	_, _ = o.w.Write(b)
}

// logReader streams a logBuffer for the control API.
type logReader struct {
	ctx        context.Context
	buf        *logBuffer
	next       uint64
	follow     bool
	timestamps bool
	since      time.Time
	closed     chan struct{}
	closeOnce  sync.Once
	pending    []byte
}

func (r *logReader) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		lines, next, ended, changed := r.buf.since(r.next)
		r.next = next
		for _, l := range lines {
			if !r.since.IsZero() && l.at.Before(r.since) {
				continue
			}
			if r.timestamps {
				r.pending = append(r.pending, l.at.UTC().Format(time.RFC3339Nano)...)
				r.pending = append(r.pending, ' ')
			}
			r.pending = append(r.pending, l.text...)
		}
		if len(r.pending) > 0 {
			break
		}
		if !r.follow || ended {
			return 0, io.EOF
		}
		select {
		case <-changed:
		case <-r.ctx.Done():
			return 0, io.EOF
		case <-r.closed:
			return 0, io.EOF
		}
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

func (r *logReader) Close() error {
	r.closeOnce.Do(func() { close(r.closed) })
	return nil
}

package logbuf

import (
	"bytes"
	"context"
	"io"
	"sync"
	"time"
)

// DefaultBytes is how much output a Buffer keeps by default, oldest lines
// dropped first.
const DefaultBytes = 1 << 20

// maxLineBytes cuts a line that never ends, so one runaway write cannot
// hold the buffer or podgate's terminal hostage.
const maxLineBytes = 64 << 10

type line struct {
	at   time.Time
	text []byte // with its trailing newline
}

// Buffer is the output of one container instance: a bounded list of
// lines with absolute sequence numbers, so a following reader can tell
// what it has missed when old lines were dropped.
type Buffer struct {
	limit int

	mu    sync.Mutex
	lines []line
	first uint64 // sequence number of lines[0]
	bytes int
	ended bool
	// notify is closed on the next change; made only when a reader
	// asks (since), so lines nobody follows cost no channel each.
	notify chan struct{}
}

// New returns a Buffer keeping up to limit bytes (DefaultBytes when
// limit <= 0); the last line is kept whatever its size.
func New(limit int) *Buffer {
	if limit <= 0 {
		limit = DefaultBytes
	}
	return &Buffer{limit: limit}
}

func (b *Buffer) add(at time.Time, text []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, line{at: at, text: text})
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

// End marks the instance as exited: following readers stop at the end.
func (b *Buffer) End() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended = true
	b.wake()
}

func (b *Buffer) wake() {
	if b.notify != nil {
		close(b.notify)
		b.notify = nil
	}
}

// since returns the lines from sequence number seq on (clamped to what is
// kept), the next sequence number, whether the instance ended, and a
// channel closed on the next change.
func (b *Buffer) since(seq uint64) ([]line, uint64, bool, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if seq < b.first {
		seq = b.first
	}
	i := int(seq - b.first)
	out := append([]line(nil), b.lines[i:]...)
	if b.notify == nil {
		b.notify = make(chan struct{})
	}
	return out, b.first + uint64(len(b.lines)), b.ended, b.notify
}

// LineWriter splits one stream of a container into lines, prefixes each
// for podgate's terminal and keeps it in the buffer.
type LineWriter struct {
	prefix string
	out    *Output
	buf    *Buffer
	now    func() time.Time

	mu      sync.Mutex
	partial []byte
}

// NewLineWriter writes to buf, stamping lines with now, and copies each
// line to out after prefix (out may be nil: kept only).
func NewLineWriter(prefix string, out *Output, buf *Buffer, now func() time.Time) *LineWriter {
	return &LineWriter{prefix: prefix, out: out, buf: buf, now: now}
}

func (w *LineWriter) Write(p []byte) (int, error) {
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

// Flush emits an unterminated last line (the process exited mid-line).
func (w *LineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 {
		w.emit(append(w.partial, '\n'))
		w.partial = nil
	}
}

func (w *LineWriter) emit(line []byte) {
	kept := bytes.Clone(line)
	w.buf.add(w.now(), kept)
	w.out.writeLine(w.prefix, kept)
}

// Output is podgate's stdout, shared by every container: whole lines
// only, so outputs never interleave mid-line.
type Output struct {
	mu   sync.Mutex
	w    io.Writer
	line []byte // the line being written, reused (guarded by mu)
}

// NewOutput shares w; nil discards.
func NewOutput(w io.Writer) *Output { return &Output{w: w} }

func (o *Output) writeLine(prefix string, line []byte) {
	if o == nil || o.w == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	// One Write per line (so lines never interleave in w), from a
	// buffer reused across lines: a container that logs every probe
	// does not cost an allocation per line here.
	o.line = append(append(o.line[:0], prefix...), line...)
	_, _ = o.w.Write(o.line)
}

// ReadOptions choose what a Reader returns, as kubectl logs' flags do.
type ReadOptions struct {
	// Follow keeps the reader open for new lines until the instance ends
	// or the reader's context does.
	Follow bool
	// Timestamps prefixes each line with its RFC 3339 time and a space.
	Timestamps bool
	// Since, when set, skips lines written before it.
	Since time.Time
	// TailLines, when set, starts that many lines before the end.
	TailLines *int64
}

// Reader streams b from the point opts says until its end (or, following,
// until the instance ends, ctx ends or the reader is closed).
func (b *Buffer) Reader(ctx context.Context, opts ReadOptions) io.ReadCloser {
	r := &reader{ctx: ctx, buf: b, follow: opts.Follow, timestamps: opts.Timestamps, since: opts.Since, closed: make(chan struct{})}
	if opts.TailLines != nil {
		_, next, _, _ := b.since(0)
		if t := uint64(*opts.TailLines); t < next {
			r.next = next - t
		}
	}
	return r
}

type reader struct {
	ctx        context.Context
	buf        *Buffer
	next       uint64
	follow     bool
	timestamps bool
	since      time.Time
	closed     chan struct{}
	closeOnce  sync.Once
	pending    []byte
}

func (r *reader) Read(p []byte) (int, error) {
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

func (r *reader) Close() error {
	r.closeOnce.Do(func() { close(r.closed) })
	return nil
}

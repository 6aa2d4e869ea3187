package proxy

import (
	"errors"
	"io"
)

// replayLimit is how much of a request body is kept for a resend. Go's
// transport resends a request on a fresh connection when a kept-alive one
// turned out dead before a single byte reached the server; by then it may
// have read up to about its write buffer (4 KiB) from the body.
const replayLimit = 64 << 10

var errCannotReplay = errors.New("request body too large to resend")

// replayBody lets a request body be read again from the start as long as
// no more than replayLimit bytes were read: GetBody for the transport's
// resend of a request that never reached the server, and the ride-through's
// retry. Close does nothing: the server closes the inbound body itself,
// and a failed attempt must not close it under the next one.
type replayBody struct {
	src      io.ReadCloser
	buf      []byte // everything read from src, unless overflow
	off      int    // next byte of buf to hand out after a rewind
	overflow bool
}

func newReplayBody(src io.ReadCloser) *replayBody { return &replayBody{src: src} }

func (b *replayBody) Read(p []byte) (int, error) {
	if b.off < len(b.buf) {
		n := copy(p, b.buf[b.off:])
		b.off += n
		return n, nil
	}
	n, err := b.src.Read(p)
	if n > 0 && !b.overflow {
		if len(b.buf)+n > replayLimit {
			b.overflow, b.buf = true, nil
		} else {
			b.buf = append(b.buf, p[:n]...)
		}
		b.off = len(b.buf)
	}
	return n, err
}

func (b *replayBody) Close() error { return nil }

// touched reports whether anything was read.
func (b *replayBody) touched() bool { return b.overflow || len(b.buf) > 0 }

// rewind starts the body over; it is the request's GetBody.
func (b *replayBody) rewind() (io.ReadCloser, error) {
	if b.overflow {
		return nil, errCannotReplay
	}
	b.off = 0
	return b, nil
}

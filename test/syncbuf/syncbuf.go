// Package syncbuf is a bytes.Buffer that several goroutines may write and
// read at once: the log or output a test hands to the code under test (a
// slog handler, an exec.Cmd's Stdout, a server's error log) and reads
// while that code still writes it, e.g. to poll for a line or to show
// the log when the test fails.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer collects what is written to it. The zero value is empty and
// ready; a Buffer must not be copied after first use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

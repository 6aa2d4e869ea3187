package syncbuf_test

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/podgate/podgate/test/syncbuf"
)

var _ io.Writer = (*syncbuf.Buffer)(nil)

// TestConcurrentWritesAndReads writes lines from many goroutines while
// another reads, as a test polls a log: under -race an unguarded access
// fails it; a read never sees half a write, and every line comes out
// whole and exactly once.
func TestConcurrentWritesAndReads(t *testing.T) {
	const writers, lines = 8, 200
	var b syncbuf.Buffer
	var wg sync.WaitGroup
	written := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-written:
				return
			default:
			}
			if s := b.String(); s != "" && !strings.HasSuffix(s, "\n") {
				t.Errorf("a read saw half a write: ends in %q", s[max(0, len(s)-20):])
				return
			}
		}
	}()
	for w := range writers {
		wg.Go(func() {
			for i := range lines {
				if n, err := fmt.Fprintf(&b, "writer %d line %d\n", w, i); err != nil || n == 0 {
					t.Errorf("write: %d, %v", n, err)
				}
			}
		})
	}
	wg.Wait()
	close(written)
	<-readerDone

	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		seen[line]++
	}
	if len(seen) != writers*lines {
		t.Errorf("%d distinct lines, want %d", len(seen), writers*lines)
	}
	for w := range writers {
		for i := range lines {
			if line := fmt.Sprintf("writer %d line %d", w, i); seen[line] != 1 {
				t.Errorf("%q appears %d times, want once", line, seen[line])
			}
		}
	}
}

func TestZeroValueIsEmpty(t *testing.T) {
	var b syncbuf.Buffer
	if got := b.String(); got != "" {
		t.Errorf("String() of a zero Buffer = %q, want empty", got)
	}
}

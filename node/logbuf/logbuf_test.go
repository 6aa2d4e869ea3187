package logbuf

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// stepClock hands out t0, t0+1s, t0+2s, … one per line.
func stepClock() func() time.Time {
	var mu sync.Mutex
	n := 0
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		n++
		return t0.Add(time.Duration(n-1) * time.Second)
	}
}

func readAll(t *testing.T, r io.ReadCloser) string {
	t.Helper()
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ptr[T any](v T) *T { return &v }

func TestReaders(t *testing.T) {
	t.Parallel()
	buf := New(0)
	w := NewLineWriter("", nil, buf, stepClock())
	_, _ = io.WriteString(w, "one\ntwo\nthr")
	_, _ = io.WriteString(w, "ee\nfour")
	w.Flush()
	buf.End()
	for _, tc := range []struct {
		name string
		opts ReadOptions
		want string
	}{
		{"everything, an unterminated last line ended by Flush", ReadOptions{}, "one\ntwo\nthree\nfour\n"},
		{"the last lines", ReadOptions{TailLines: ptr(int64(2))}, "three\nfour\n"},
		{"more tail lines than there are is everything", ReadOptions{TailLines: ptr(int64(10))}, "one\ntwo\nthree\nfour\n"},
		{"lines since a time", ReadOptions{Since: t0.Add(2 * time.Second)}, "three\nfour\n"},
		{"timestamps prefix each line", ReadOptions{TailLines: ptr(int64(1)), Timestamps: true}, "2026-01-01T00:00:03Z four\n"},
		{"following an ended instance ends at its end", ReadOptions{Follow: true, TailLines: ptr(int64(1))}, "four\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := readAll(t, buf.Reader(context.Background(), tc.opts)); got != tc.want {
				t.Errorf("read %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTheOldestLinesGoFirstButTheLastStays(t *testing.T) {
	t.Parallel()
	buf := New(10)
	w := NewLineWriter("", nil, buf, stepClock())
	_, _ = io.WriteString(w, "aaaa\nbbbb\ncccc\n")
	if got := readAll(t, buf.Reader(context.Background(), ReadOptions{})); got != "bbbb\ncccc\n" {
		t.Errorf("kept %q, want the newest 10 bytes of whole lines", got)
	}
	_, _ = io.WriteString(w, strings.Repeat("x", 20)+"\n")
	if got := readAll(t, buf.Reader(context.Background(), ReadOptions{})); got != strings.Repeat("x", 20)+"\n" {
		t.Errorf("kept %q, want only the last line, however long", got)
	}
}

func TestLineWriterPrefixesWholeLinesAndCutsRunawayOnes(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	buf := New(0)
	w := NewLineWriter("web/app | ", NewOutput(&out), buf, stepClock())
	_, _ = io.WriteString(w, "hel")
	if out.Len() != 0 {
		t.Fatalf("half a line reached the output: %q", out.String())
	}
	_, _ = io.WriteString(w, "lo\n")
	_, _ = io.WriteString(w, strings.Repeat("y", maxLineBytes+5))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || lines[0] != "web/app | hello" || lines[1] != "web/app | "+strings.Repeat("y", maxLineBytes+5) {
		t.Errorf("output lines: %d, first %q", len(lines), lines[0])
	}
	if got := readAll(t, buf.Reader(context.Background(), ReadOptions{TailLines: ptr(int64(1))})); len(got) != maxLineBytes+6 {
		t.Errorf("the runaway line was kept as %d bytes, want it cut at %d and ended", len(got), maxLineBytes+5)
	}
}

func TestAFollowerSeesNewLinesAndStops(t *testing.T) {
	t.Parallel()
	for _, stop := range []string{"the instance ends", "the context ends", "the reader is closed"} {
		t.Run(stop, func(t *testing.T) {
			t.Parallel()
			buf := New(0)
			w := NewLineWriter("", nil, buf, stepClock())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := buf.Reader(ctx, ReadOptions{Follow: true})
			defer r.Close()
			got, caughtUp := make(chan string, 1), make(chan struct{})
			go func() {
				var acc []byte
				b := make([]byte, 4)
				for {
					n, err := r.Read(b)
					acc = append(acc, b[:n]...)
					if string(acc) == "first\nsecond\n" && n > 0 {
						close(caughtUp)
					}
					if err != nil {
						got <- string(acc)
						return
					}
				}
			}()
			_, _ = io.WriteString(w, "first\n")
			_, _ = io.WriteString(w, "second\n")
			// The follower has both lines before the stop, so the stop is
			// what ends it.
			select {
			case <-caughtUp:
			case <-time.After(30 * time.Second):
				t.Fatal("the follower never saw the new lines")
			}
			switch stop {
			case "the instance ends":
				buf.End()
			case "the context ends":
				cancel()
			default:
				r.Close()
			}
			select {
			case s := <-got:
				if s != "first\nsecond\n" {
					t.Errorf("followed %q", s)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("the follower did not stop when %s", stop)
			}
		})
	}
}

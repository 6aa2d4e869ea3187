package proxy

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	t.Parallel()
	if l := NewLimiter(0); l != nil || l.Depth() != 0 {
		t.Fatalf("NewLimiter(0) = %v, want nil (unlimited) with depth 0", l)
	}
	l := NewLimiter(1)
	ctx := context.Background()
	if err := l.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	// The slot is taken: a waiter whose context ends leaves the queue with
	// the cause.
	cctx, cancel := context.WithCancelCause(ctx)
	cause := errors.New("request timeout")
	cancel(cause)
	if err := l.acquire(cctx); !errors.Is(err, cause) {
		t.Fatalf("a cancelled waiter: %v, want its cause", err)
	}
	// The next ten wait (10 × the concurrency), the
	// eleventh is refused at once.
	waiting := make(chan error, 10)
	for range 10 {
		go func() {
			err := l.acquire(ctx)
			if err == nil {
				l.release()
			}
			waiting <- err
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for l.Depth() != 10 {
		if time.Now().After(deadline) {
			t.Fatalf("depth %d, want 10 waiting", l.Depth())
		}
		time.Sleep(time.Millisecond)
	}
	if err := l.acquire(ctx); !errors.Is(err, errQueueFull) {
		t.Fatalf("the eleventh waiter: %v, want %v", err, errQueueFull)
	}
	l.release()
	for range 10 {
		if err := <-waiting; err != nil {
			t.Errorf("a waiter: %v", err)
		}
	}
	if d := l.Depth(); d != 0 {
		t.Errorf("depth %d after everyone was served, want 0", d)
	}
}

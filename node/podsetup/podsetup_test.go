package podsetup

import (
	"context"
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// waitForWaiter polls until Retry waits on the fake clock.
func waitForWaiter(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("Retry never waited on the clock")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRetryBacksOffFromHalfASecondDoublingToItsCap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		failures   int
		wantDelays []time.Duration
	}{
		{"success at once: no wait", 0, nil},
		{"one failure: half a second", 1, []time.Duration{FirstRetry}},
		{"doubling up to the cap", 8, []time.Duration{
			500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
			8 * time.Second, 16 * time.Second, MaxRetry, MaxRetry}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := clocktesting.NewFakeClock(time.Unix(0, 0))
			attempts := make(chan time.Time, 20)
			var told []error
			n := 0 // attempts so far, on Retry's goroutine
			prepare := func(context.Context) error {
				n++
				attempts <- clk.Now()
				if n <= tc.failures {
					return errors.New("not yet")
				}
				return nil
			}
			done := make(chan bool, 1)
			go func() {
				done <- Retry(context.Background(), prepare, clk, func(err error) { told = append(told, err) })
			}()
			last := <-attempts
			for i, want := range tc.wantDelays {
				waitForWaiter(t, clk)
				clk.Step(want - time.Nanosecond)
				if !clk.HasWaiters() {
					t.Fatalf("attempt %d came before %v", i+2, want)
				}
				clk.Step(time.Nanosecond)
				at := <-attempts
				if got := at.Sub(last); got != want {
					t.Errorf("delay %d = %v, want %v", i+1, got, want)
				}
				last = at
			}
			if ok := <-done; !ok {
				t.Error("Retry = false, want true once prepare succeeded")
			}
			if len(told) != tc.failures {
				t.Errorf("%d failures told, want %d", len(told), tc.failures)
			}
		})
	}
}

func TestRetryEndsWithItsContext(t *testing.T) {
	t.Parallel()
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool, 1)
	go func() {
		done <- Retry(ctx, func(context.Context) error { return errors.New("never") }, clk, func(error) {})
	}()
	waitForWaiter(t, clk)
	cancel()
	if ok := <-done; ok {
		t.Error("Retry = true after its context ended, want false")
	}
	// An attempt the context cut short is not a failure to tell.
	ctx, cancel = context.WithCancel(context.Background())
	told := 0
	ok := Retry(ctx, func(context.Context) error { cancel(); return errors.New("cut short") }, clk, func(error) { told++ })
	if ok || told != 0 {
		t.Errorf("Retry = %v with %d failures told, want false and none", ok, told)
	}
}

package drain

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// eventually polls cond until it holds or 30 s pass.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestDrainerQuietPeriod pins the drain rule on a fake clock: done once no
// request arrived for the quiet period (each arrival restarts it) and none
// is in flight.
func TestDrainerQuietPeriod(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	d := New(clk, 30*time.Second)
	defer d.Stop()
	// settle waits until the drain's goroutine waits on the clock again.
	settle := func() { eventually(t, "the drainer waits", clk.HasWaiters) }

	d.Drain()
	settle()
	clk.Step(29 * time.Second)
	settle()
	if isClosed(d.Done()) {
		t.Fatal("done before the quiet period")
	}
	d.Arrive() // a request at 29 s: quiet until 59 s
	clk.Step(time.Second)
	settle()
	if isClosed(d.Done()) {
		t.Fatal("done 1 s after a request")
	}
	clk.Step(29 * time.Second) // 59 s: quiet, but the request is in flight
	eventually(t, "the drainer waits for the request", func() bool { return !clk.HasWaiters() })
	if isClosed(d.Done()) {
		t.Fatal("done with a request in flight")
	}
	d.Leave()
	eventually(t, "the drain completes", func() bool { return isClosed(d.Done()) })
}

func TestDrainerWithoutTrafficEndsAfterTheQuietPeriod(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	d := New(clk, 30*time.Second)
	defer d.Stop()
	d.Arrive()
	d.Leave() // a request long before the drain does not shorten it
	clk.Step(time.Hour)
	d.Drain()
	eventually(t, "the drainer waits", clk.HasWaiters)
	clk.Step(30 * time.Second)
	eventually(t, "the drain completes", func() bool { return isClosed(d.Done()) })
}

// TestDrainerEndsEarlyOnTheOnlyRoutersConfirmation pins the early end on a
// fake clock: the only router's confirmation ends the drain as soon as
// nothing is in flight, unless a request arrived after it.
func TestDrainerEndsEarlyOnTheOnlyRoutersConfirmation(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, clk *testingclock.FakeClock, d *Drainer)
		// wantEarly: done at once, before the clock moved.
		wantEarly bool
	}{
		{
			name: "confirmed during the drain with nothing in flight: done at once",
			run: func(t *testing.T, clk *testingclock.FakeClock, d *Drainer) {
				d.Drain()
				if !d.Unrouted() {
					t.Error("the first confirmation was not taken")
				}
			},
			wantEarly: true,
		},
		{
			name: "confirmed before the drain: done as it starts",
			run: func(t *testing.T, clk *testingclock.FakeClock, d *Drainer) {
				d.Arrive()
				d.Leave()
				d.Unrouted()
				d.Drain()
			},
			wantEarly: true,
		},
		{
			name: "confirmed with a request in flight: done when it leaves",
			run: func(t *testing.T, clk *testingclock.FakeClock, d *Drainer) {
				d.Arrive()
				d.Drain()
				d.Unrouted()
				eventually(t, "the drainer waits", clk.HasWaiters)
				if isClosed(d.Done()) {
					t.Fatal("done with a request in flight")
				}
				d.Leave()
			},
			wantEarly: true,
		},
		{
			name: "a request after the confirmation came another way: the quiet period rules",
			run: func(t *testing.T, clk *testingclock.FakeClock, d *Drainer) {
				d.Unrouted()
				d.Arrive()
				d.Leave()
				d.Drain()
				eventually(t, "the drainer waits", clk.HasWaiters)
				if isClosed(d.Done()) {
					t.Fatal("done at once although a request arrived after the confirmation")
				}
				if d.Unrouted() {
					t.Error("a second confirmation was taken: it cannot speak for the other way in")
				}
				clk.Step(29 * time.Second)
				eventually(t, "the drainer waits", clk.HasWaiters)
				if isClosed(d.Done()) {
					t.Fatal("done before the quiet period")
				}
				clk.Step(time.Second)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Now())
			d := New(clk, 30*time.Second)
			defer d.Stop()
			tc.run(t, clk, d)
			eventually(t, "the drain completes", func() bool { return isClosed(d.Done()) })
			if d.EndedEarly() != tc.wantEarly {
				t.Errorf("EndedEarly = %v, want %v", d.EndedEarly(), tc.wantEarly)
			}
		})
	}
}

func TestDrainerRemaining(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	d := New(clk, 30*time.Second)
	defer d.Stop()
	d.Drain()
	clk.Step(10 * time.Second)
	d.Arrive()
	if q, n := d.Remaining(); q != 30*time.Second || n != 1 {
		t.Errorf("after a request: %s quiet left, %d in flight; want 30s, 1", q, n)
	}
	clk.Step(31 * time.Second)
	if q, n := d.Remaining(); q != 0 || n != 1 {
		t.Errorf("past the quiet period: %s, %d; want 0s, 1 (waiting for the request only)", q, n)
	}
	d.Leave()
	eventually(t, "the drain completes", func() bool { return isClosed(d.Done()) })
}

// stepBeforeTimer is a fake clock that is stepped, as a test would step
// it, between the drainer reading the time and setting its timer.
type stepBeforeTimer struct {
	*testingclock.FakeClock
	step  time.Duration
	once  sync.Once
	timed chan struct{}
}

func (c *stepBeforeTimer) NewTimer(d time.Duration) clock.Timer {
	c.once.Do(func() {
		c.FakeClock.Step(c.step)
		close(c.timed)
	})
	return c.FakeClock.NewTimer(d)
}

// TestDrainerEndsWhenTheClockPassesTheDeadlineBeforeItsTimerIsSet pins
// the drainer against a clock that moves between its reading and the
// timer: the timer, set from the moved clock, would only fire a whole
// quiet period late (never, on a fake clock no test steps again). CI saw
// the gate's drain test hang on it.
func TestDrainerEndsWhenTheClockPassesTheDeadlineBeforeItsTimerIsSet(t *testing.T) {
	clk := &stepBeforeTimer{FakeClock: testingclock.NewFakeClock(time.Now()), step: 30 * time.Second, timed: make(chan struct{})}
	d := New(clk, 30*time.Second)
	defer d.Stop()
	d.Drain()
	<-clk.timed
	eventually(t, "the drain ends at the quiet period's end", func() bool { return isClosed(d.Done()) })
	if d.EndedEarly() {
		t.Error("ended early, want on the quiet period")
	}
}

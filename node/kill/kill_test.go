package kill

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// fakeProcess records, in fake-clock time since the kill began, when each
// signal arrived; it exits on SIGTERM only if told to.
type fakeProcess struct {
	clk       *clocktesting.FakeClock
	start     time.Time
	exitsTerm bool

	mu         sync.Mutex
	term, kill time.Duration // -1: not sent
	termSeen   atomic.Bool
	done       chan struct{}
	doneOnce   sync.Once
}

func (p *fakeProcess) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if sig == syscall.SIGTERM && p.term < 0 {
		p.term = p.clk.Since(p.start)
		if p.exitsTerm {
			p.doneOnce.Do(func() { close(p.done) })
		}
		p.termSeen.Store(true)
	}
	return nil
}

func (p *fakeProcess) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.kill < 0 {
		p.kill = p.clk.Since(p.start)
	}
	p.doneOnce.Do(func() { close(p.done) })
}

func (p *fakeProcess) Done() <-chan struct{} { return p.done }

const never = -1

func TestKillSequence(t *testing.T) {
	t.Parallel()
	s := time.Second
	for _, tc := range []struct {
		name      string
		grace     time.Duration
		hook      time.Duration // how long preStop takes; never: no hook; 0 with hang: hangs
		hangs     bool          // preStop runs until its context ends
		exitsTerm bool
		forceAt   time.Duration // never: not forced
		wantTerm  time.Duration
		wantKill  time.Duration
		wantHook  bool // preStop ran
	}{
		{name: "a process that exits on SIGTERM gets no SIGKILL", grace: 30 * s, hook: never, exitsTerm: true, forceAt: never, wantTerm: 0, wantKill: never},
		{name: "SIGKILL follows when the grace period is over", grace: 30 * s, hook: never, forceAt: never, wantTerm: 0, wantKill: 30 * s},
		{name: "a grace period under the floor still gets two seconds", grace: s, hook: never, forceAt: never, wantTerm: 0, wantKill: 2 * s},
		{name: "preStop eats into the grace period", grace: 30 * s, hook: 25 * s, forceAt: never, wantTerm: 25 * s, wantKill: 30 * s, wantHook: true},
		{name: "preStop using it all leaves the two second floor", grace: 30 * s, hook: 29 * s, forceAt: never, wantTerm: 29 * s, wantKill: 31 * s, wantHook: true},
		{name: "a hanging preStop is cut off at the end of the grace period", grace: 10 * s, hangs: true, forceAt: never, wantTerm: 10 * s, wantKill: 12 * s, wantHook: true},
		{name: "grace zero skips preStop", grace: 0, hook: 5 * s, forceAt: never, wantTerm: 0, wantKill: 2 * s},
		{name: "forcing during preStop kills at once", grace: 30 * s, hangs: true, forceAt: 3 * s, wantTerm: 3 * s, wantKill: 3 * s, wantHook: true},
		{name: "forcing after SIGTERM kills at once", grace: 30 * s, hook: never, forceAt: 5 * s, wantTerm: 0, wantKill: 5 * s},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			pr := &fakeProcess{clk: clk, start: clk.Now(), exitsTerm: tc.exitsTerm, term: never, kill: never, done: make(chan struct{})}
			var hookWaiting, hookRan atomic.Bool
			var preStop func(context.Context)
			if tc.hangs || tc.hook != never {
				preStop = func(ctx context.Context) {
					hookRan.Store(true)
					var after <-chan time.Time
					if !tc.hangs {
						after = clk.After(tc.hook)
					}
					hookWaiting.Store(true)
					defer hookWaiting.Store(false)
					select {
					case <-ctx.Done():
					case <-after:
					}
				}
			}
			k := New(false)
			done := make(chan struct{})
			go func() {
				defer close(done)
				k.Run(clk, pr, tc.grace, preStop, nil)
			}()
			// The hook wakes when it is done, the grace period ends or the
			// kill is forced, whichever comes first.
			hookEnd := tc.grace
			if !tc.hangs && tc.hook != never {
				hookEnd = min(hookEnd, tc.hook)
			}
			if tc.forceAt != never {
				hookEnd = min(hookEnd, tc.forceAt+1)
			}
			step := 500 * time.Millisecond
			deadline := time.Now().Add(30 * time.Second)
			for finished := false; !finished; {
				// Step only once the kill is blocked on the clock.
				for {
					select {
					case <-done:
						finished = true
					default:
					}
					if finished || (hookWaiting.Load() && clk.Since(pr.start) < hookEnd) || (pr.termSeen.Load() && clk.HasWaiters()) {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the kill never blocked on the clock or returned")
					}
					time.Sleep(time.Millisecond)
				}
				if finished {
					break
				}
				if tc.forceAt != never && clk.Since(pr.start) == tc.forceAt {
					k.Force()
					<-done
					break
				}
				clk.Step(step)
			}
			pr.mu.Lock()
			defer pr.mu.Unlock()
			if pr.term != tc.wantTerm || pr.kill != tc.wantKill {
				t.Errorf("SIGTERM at %s, SIGKILL at %s; want %s, %s (-1: never)", pr.term, pr.kill, tc.wantTerm, tc.wantKill)
			}
			if hookRan.Load() != tc.wantHook {
				t.Errorf("preStop ran: %v, want %v", hookRan.Load(), tc.wantHook)
			}
			if k.Forced() != (tc.forceAt != never) {
				t.Errorf("Forced() = %v", k.Forced())
			}
		})
	}
}

func TestHoldEndsWhenTheWaitEndsTheKillIsForcedOrTheProcessExits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		force     bool // Force while held
		exit      bool // the process exits while held
		waitsOver bool // the wait returns on its own
		wantCtx   bool // the wait's context ended
	}{
		{"the wait returns on its own", false, false, true, false},
		{"a forced kill ends the hold", true, false, false, true},
		{"the process exiting ends the hold", false, true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			p := &fakeProcess{clk: clk, start: clk.Now(), term: never, kill: never, done: make(chan struct{})}
			k := New(true)
			held := make(chan struct{})
			ctxEnded := false
			done := make(chan struct{})
			go func() {
				defer close(done)
				k.Hold(p, func(ctx context.Context) {
					close(held)
					if tc.waitsOver {
						return
					}
					<-ctx.Done()
					ctxEnded = true
				})
			}()
			<-held
			switch {
			case tc.force:
				k.Force()
			case tc.exit:
				p.Kill()
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Hold did not return")
			}
			if ctxEnded != tc.wantCtx {
				t.Fatalf("the wait's context ended: %v, want %v", ctxEnded, tc.wantCtx)
			}
		})
	}
}

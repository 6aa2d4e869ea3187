package prober

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/podgate/podgate/probe"
)

// worker probes one (container, kind). Its goroutine only waits and runs
// attempts; every decision is made under Manager.mu by plan and record, from
// the clock reading it is given.
type worker struct {
	m       *Manager
	c       *container
	kind    Kind
	cfg     Config
	attempt AttemptFunc
	kick    chan struct{} // re-plan now; buffered so senders never block

	// Guarded by Manager.mu.
	state    State
	counter  Counter
	onHold   bool // threshold Failure (liveness/startup) or startup verdict: wait for a new container
	finished bool // pod terminating (liveness/startup): never probe again
	jittered bool // the first-run jitter is spent
	manual   bool // run now if eligible, then restart the period
	anchor   time.Time
	next     time.Time // next grid point; zero = no container yet
	epoch    uint64    // bumped to drop the in-flight attempt's result
	cancel   context.CancelFunc

	// timer wakes the parked worker at its next grid point; one per
	// worker, reset on every park, rather than a new one per tick. Only
	// the worker's goroutine uses it.
	timer clock.Timer

	// Observed by tests to know the worker has nothing left to do at the
	// current clock reading. A channel send to a goroutine blocked in select
	// is handed over directly, so the channels' lengths cannot tell; poked
	// and the wake time can.
	parkMu sync.Mutex
	parked bool
	wakeAt time.Time
	poked  atomic.Bool
	exited atomic.Bool
}

type step int

const (
	stepPark step = iota
	stepRun
	stepExit
)

// decision is what plan concluded.
type decision struct {
	step  step
	now   time.Time
	wake  time.Time // stepPark: zero = until poked
	ctx   context.Context
	epoch uint64
}

func (w *worker) run() {
	defer w.m.wg.Done()
	defer w.exited.Store(true)
	for {
		w.m.mu.Lock()
		p := w.plan(w.m.clock.Now())
		w.m.mu.Unlock()
		switch p.step {
		case stepExit:
			return
		case stepRun:
			w.runAttempt(p)
		case stepPark:
			if !w.wait(p) {
				return
			}
		}
	}
}

// plan decides, at now, whether to probe, sleep until the next grid point,
// or exit. Must hold Manager.mu.
func (w *worker) plan(now time.Time) decision {
	if w.m.stopped || w.finished {
		return decision{step: stepExit}
	}
	if !w.c.running || w.next.IsZero() {
		w.manual = false
		return decision{step: stepPark, now: now}
	}
	if w.manual {
		w.manual = false
		if w.eligible(now) {
			// As the kubelet resets its ticker after a manual run.
			w.anchor, w.next = now, now.Add(w.cfg.Period)
			return w.start(now)
		}
	}
	if !now.Before(w.next) {
		// A grid point is due. If an attempt overran several, they
		// collapse into this one run (a Go ticker holds one tick).
		w.next = NextTick(w.anchor, w.cfg.Period, now)
		if w.eligible(now) {
			return w.start(now)
		}
	}
	return decision{step: stepPark, now: now, wake: w.next}
}

// eligible applies the kubelet's gates in order. Must hold Manager.mu.
func (w *worker) eligible(now time.Time) bool {
	c := w.c
	if !c.running || w.onHold || w.finished {
		return false
	}
	if now.Sub(c.startedAt) < w.cfg.InitialDelay {
		return false
	}
	if w.kind == Startup {
		// Once Started, the startup worker idles (until a new container).
		return !c.started()
	}
	// Readiness and liveness idle until the container is Started.
	return c.started()
}

func (w *worker) start(now time.Time) decision {
	ctx, cancel := context.WithCancel(w.m.ctx)
	w.cancel = cancel
	return decision{step: stepRun, now: now, ctx: ctx, epoch: w.epoch}
}

func (w *worker) runAttempt(p decision) {
	out := w.safeAttempt(p.ctx)
	m := w.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if w.epoch != p.epoch || m.stopped {
		// The container was replaced or stopped, the pod is terminating,
		// or the Manager stopped: this result no longer counts.
		return
	}
	w.cancel()
	w.cancel = nil
	w.record(out, m.clock.Now())
}

func (w *worker) safeAttempt(ctx context.Context) (out probe.Outcome) {
	defer func() {
		if r := recover(); r != nil {
			out = probe.Outcome{Result: probe.Error, Err: fmt.Errorf("probe attempt panicked: %v", r)}
		}
	}()
	return w.attempt(ctx)
}

// wait parks until the next grid point, a poke, or Stop. It reports false on
// Stop.
func (w *worker) wait(p decision) bool {
	var timerC <-chan time.Time
	if !p.wake.IsZero() {
		if w.timer == nil {
			w.timer = w.m.clock.NewTimer(p.wake.Sub(p.now))
		} else {
			w.timer.Reset(p.wake.Sub(p.now))
		}
		timerC = w.timer.C()
	}
	w.parkMu.Lock()
	w.parked, w.wakeAt = true, p.wake
	w.parkMu.Unlock()
	ok := true
	select {
	case <-w.m.stopCh:
		ok = false
	case <-w.kick:
	case <-timerC:
	}
	w.parkMu.Lock()
	w.parked = false
	w.poked.Store(false)
	w.parkMu.Unlock()
	if timerC != nil && !w.timer.Stop() {
		// Fired, and not received if another case won: drain it, or the
		// next park would wake at once (a fake clock's timer channel
		// keeps the value; a real timer's Stop already dropped it).
		select {
		case <-timerC:
		default:
		}
	}
	return ok
}

// idle reports whether the worker is parked with nothing pending, or gone.
// For tests: with a fake clock, an idle worker does nothing until the clock
// moves or the Manager is told something.
func (w *worker) idle() bool {
	if w.exited.Load() {
		return true
	}
	w.parkMu.Lock()
	defer w.parkMu.Unlock()
	return w.parked && !w.poked.Load() && len(w.kick) == 0 &&
		(w.wakeAt.IsZero() || w.m.clock.Now().Before(w.wakeAt))
}

// record applies one tick's outcome with the kubelet's counting rules,
// then, with Options.EveryAttempt, reports the tick itself. Must hold
// Manager.mu.
func (w *worker) record(out probe.Outcome, now time.Time) {
	out, restart := w.count(out, now)
	if w.m.everyAttempt {
		w.emit(Update{Type: Attempted, Outcome: out, Restart: restart}, now)
	}
}

// count applies one tick's outcome: the attempt's Update, the counter,
// the state. It returns the outcome as counted (an unknown result is an
// Error) and whether it asked for a restart. Must hold Manager.mu.
func (w *worker) count(out probe.Outcome, now time.Time) (probe.Outcome, bool) {
	switch out.Result {
	case probe.Success:
	case probe.Warning:
		w.emit(Update{Type: AttemptWarned, Outcome: out}, now)
	case probe.Failure:
		w.emit(Update{Type: AttemptFailed, Outcome: out}, now)
	case probe.Error:
		// Dropped without touching the run: an error between two failures
		// does not break their streak (the kubelet returns before counting).
		w.emit(Update{Type: AttemptErrored, Outcome: out}, now)
		return out, false
	default:
		if out.Err == nil {
			out.Err = fmt.Errorf("unknown probe result %d", int(out.Result))
		}
		out.Result = probe.Error
		w.emit(Update{Type: AttemptErrored, Outcome: out}, now)
		return out, false
	}
	verdict := w.counter.Observe(out.Result.Passed(), w.cfg.SuccessThreshold, w.cfg.FailureThreshold)
	if verdict == Unknown {
		return out, false
	}
	restart := w.set(verdict, CauseProbe, out, now)
	if (w.kind == Liveness && verdict == Failure) || w.kind == Startup {
		// The container is about to be killed (or, for startup, has its
		// verdict): probing it again only races the kill. Resume with the
		// next container.
		w.onHold = true
		w.counter.Reset()
	}
	return out, restart
}

// set publishes s if it differs from the current state and reports
// whether the change asks for a restart. Must hold Manager.mu.
func (w *worker) set(s State, cause Cause, out probe.Outcome, now time.Time) (restart bool) {
	if w.state == s {
		return false
	}
	prev := w.state
	wasStarted := w.c.started()
	w.state = s
	restart = w.kind != Readiness && s == Failure && cause == CauseProbe
	w.emit(Update{
		Type:     StateChanged,
		Previous: prev,
		Cause:    cause,
		Outcome:  out,
		Restart:  restart,
	}, now)
	if !wasStarted && w.c.started() {
		// Started is a pod status change: readiness runs at once rather
		// than at its next tick, as the kubelet's status update triggers it.
		if r := w.c.probes[Readiness]; r != nil && r.state != Success {
			r.requestRun()
		}
	}
	return restart
}

// emit fills in what every Update carries and queues it. Must hold
// Manager.mu, which keeps Updates in the order the state changed.
func (w *worker) emit(u Update, now time.Time) {
	u.Container = w.c.name
	u.ContainerID = w.c.id
	u.Kind = w.kind
	u.State = w.state
	u.Started = w.c.started()
	u.Ready = w.c.ready()
	u.TerminationGracePeriodSeconds = w.cfg.TerminationGracePeriodSeconds
	u.At = now
	w.m.out.push(u)
}

// resetForContainer starts over for a new container. Must hold Manager.mu.
func (w *worker) resetForContainer(now time.Time) {
	w.invalidate()
	if !w.finished {
		w.state = w.kind.initial()
	}
	w.counter.Reset()
	w.onHold, w.manual = false, false
	earliest := now
	if !w.jittered && w.m.agentJustStarted {
		earliest = earliest.Add(w.m.jitter(w.cfg.Period))
	}
	w.jittered = true
	anchor := FirstTick(w.c.startedAt, w.cfg.InitialDelay, earliest)
	w.anchor, w.next = anchor, anchor
	w.poke()
}

// invalidate drops the in-flight attempt, if any. Must hold Manager.mu.
func (w *worker) invalidate() {
	w.epoch++
	if w.cancel != nil {
		w.cancel()
		w.cancel = nil
	}
}

// requestRun asks for a run now. Must hold Manager.mu.
func (w *worker) requestRun() {
	w.manual = true
	w.poke()
}

func (w *worker) poke() {
	w.poked.Store(true)
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

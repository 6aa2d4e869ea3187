package gate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/podgate/podgate/gate/contract"
)

// PodCondition is the value of the condition the gate writes on its own
// pod (type contract.ContainersReadyCondition), which the pod's readiness gate
// waits for: True once every container is ready; False with reason
// contract.ReasonContainersNotReady and a message naming each container that
// is not and why; False with reason contract.ReasonDraining once the drain
// started. It puts the truth the gate alone knows (it runs the readiness
// probes) where `kubectl describe pod` and `podgate get pods` show it.
type PodCondition struct {
	Ready   bool
	Reason  string
	Message string
	// LastTransition is when Ready last changed in the gate's view: the
	// condition's lastTransitionTime.
	LastTransition time.Time
}

// same reports whether two values say the same thing; the transition
// time alone is no reason to write.
func (c PodCondition) same(o PodCondition) bool {
	return c.Ready == o.Ready && c.Reason == o.Reason && c.Message == o.Message
}

func (c PodCondition) String() string {
	if c.Ready {
		return "True"
	}
	return fmt.Sprintf("False (%s: %s)", c.Reason, c.Message)
}

// ConditionWriter writes the gate's condition on its own pod: on
// Kubernetes and locally alike, a patch of pods/status that touches that
// one condition and none of the node agent's.
//
// The interface lives here, with its consumer; package gate/podapi
// implements it on client-go.
type ConditionWriter interface {
	// WriteCondition sets the condition to c. An error wrapping
	// ErrNotPermitted means the API refused the write for want of a
	// permission: retrying soon will not help.
	WriteCondition(ctx context.Context, c PodCondition) error
}

// ErrNotPermitted marks a write the API refused for want of a permission
// (RBAC: the gate's service account may not patch pods/status; or the
// node status service refused the request). The error's text says which.
var ErrNotPermitted = errors.New("not permitted")

// Timing of the condition's writes: at most one per conditionMinGap (a
// burst of changes is written as its last value, and flapping back to the
// written value writes nothing), failed writes retried after a pause
// doubling from conditionRetryMin to conditionRetryMax, and at shutdown a
// pending value gets conditionFlushTimeout to go out.
const (
	conditionMinGap       = 100 * time.Millisecond
	conditionRetryMin     = 100 * time.Millisecond
	conditionRetryMax     = 30 * time.Second
	conditionFlushTimeout = time.Second
)

// conditionPublisher keeps the gate's condition on its pod current: it
// writes only when the value changes, and the last value wins.
type conditionPublisher struct {
	w     ConditionWriter
	clock clock.WithDelayedExecution
	log   *slog.Logger
	// value is the condition as the gate sees it now.
	value func() PodCondition
	// kicked: the value may have changed.
	kicked chan struct{}

	// Owned by run.
	written     *PodCondition // the value last written, nil before the first
	ready       *bool         // Ready at the last look, for LastTransition
	since       time.Time
	lastWrite   time.Time
	failures    int
	lastErr     string
	noPerms     bool // the last failure was for want of a permission
	toldNoPerms bool
}

func newConditionPublisher(w ConditionWriter, clk clock.WithDelayedExecution, log *slog.Logger, value func() PodCondition) *conditionPublisher {
	if w == nil {
		return nil
	}
	return &conditionPublisher{w: w, clock: clk, log: log, value: value, kicked: make(chan struct{}, 1)}
}

// kick says the value may have changed. It never blocks, and is a no-op
// on a nil publisher (no writer).
func (p *conditionPublisher) kick() {
	if p == nil {
		return
	}
	select {
	case p.kicked <- struct{}{}:
	default:
	}
}

// start runs the publisher until ctx ends; the channel closes once it
// returned (after a last attempt to write a pending value).
func (p *conditionPublisher) start(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	if p == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		p.run(ctx)
	}()
	return done
}

// run writes the condition whenever a kick finds it changed, no sooner
// than conditionMinGap after the last write, retrying a failed write with
// the value current at the retry.
func (p *conditionPublisher) run(ctx context.Context) {
	pending := true // the first value goes out at once
	for {
		if !pending {
			select {
			case <-ctx.Done():
				p.flush()
				return
			case <-p.kicked:
			}
		}
		pending = false
		if !p.lastWrite.IsZero() {
			if !p.sleep(ctx, p.lastWrite.Add(conditionMinGap).Sub(p.clock.Now())) {
				p.flush()
				return
			}
		}
		want, changed := p.current()
		if !changed {
			continue
		}
		p.lastWrite = p.clock.Now()
		if err := p.w.WriteCondition(ctx, want); err != nil {
			if ctx.Err() != nil {
				// Cut short by the gate's stop: whether it arrived is
				// unknown, so the value the gate stops with goes out.
				p.written = nil
				p.flush()
				return
			}
			p.failed(err)
			if !p.sleep(ctx, p.retryPause()) {
				return
			}
			pending = true // again, with whatever the value is by then
			continue
		}
		p.succeeded(want)
	}
}

// current is the value now, with its transition time, and whether it
// differs from the one written.
func (p *conditionPublisher) current() (PodCondition, bool) {
	want := p.value()
	if p.ready == nil || *p.ready != want.Ready {
		r := want.Ready
		p.ready, p.since = &r, p.clock.Now()
	}
	want.LastTransition = p.since
	return want, p.written == nil || !p.written.same(want)
}

// flush makes one last, bounded attempt to write a value that changed
// since the last write (the drain's start, typically) as the gate stops;
// not when the API was failing anyway.
func (p *conditionPublisher) flush() {
	if p.failures > 0 {
		return
	}
	want, changed := p.current()
	if !changed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), conditionFlushTimeout)
	defer cancel()
	if err := p.w.WriteCondition(ctx, want); err != nil {
		p.log.Warn("could not write the pod condition as the gate stops", "condition", contract.ContainersReadyCondition, "error", err)
		return
	}
	p.succeeded(want)
}

func (p *conditionPublisher) succeeded(c PodCondition) {
	p.written = &c
	attrs := []any{"condition", contract.ContainersReadyCondition, "status", c.String()}
	if p.failures > 0 {
		attrs = append(attrs, "afterFailedAttempts", p.failures)
	}
	p.log.Info("pod condition written", attrs...)
	p.failures, p.lastErr, p.noPerms = 0, "", false
}

// failed logs a failed write without flooding the log: a refusal for want
// of permission once for the gate's life, naming the permission; another
// error when it first occurs and when it changes.
func (p *conditionPublisher) failed(err error) {
	p.failures++
	p.noPerms = errors.Is(err, ErrNotPermitted)
	if p.noPerms {
		if !p.toldNoPerms {
			p.toldNoPerms = true
			// The error says what to fix: the RBAC permission of the pod's
			// service account (the API server), or why the node status
			// service refused (gate/podapi words it by source).
			p.log.Error("the API refuses the gate's pod condition: until it is fixed the pod never becomes Ready "+
				"(its readiness gate waits for the condition); retrying every "+conditionRetryMax.String()+" without logging again",
				"condition", contract.ContainersReadyCondition, "error", err)
		}
		return
	}
	if msg := err.Error(); msg != p.lastErr {
		p.lastErr = msg
		p.log.Warn("could not write the pod condition; retrying", "condition", contract.ContainersReadyCondition,
			"error", err, "retryIn", p.retryPause().String())
	}
}

// retryPause doubles from conditionRetryMin with every failure in a row,
// up to conditionRetryMax; straight to the maximum for a missing
// permission, which takes a person to grant.
func (p *conditionPublisher) retryPause() time.Duration {
	if p.noPerms {
		return conditionRetryMax
	}
	d := conditionRetryMin
	for i := 1; i < p.failures && d < conditionRetryMax; i++ {
		d *= 2
	}
	return min(d, conditionRetryMax)
}

// sleep waits d on the gate's clock; false if ctx ended first.
func (p *conditionPublisher) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := p.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// condition is the gate's condition as it stands: what Ready answers,
// with its reason. The containers' part comes from one look at the
// aggregator (NotReady, under its lock), not from Ready's atomic value: a
// container's change kicks the publisher before the aggregate is stored,
// and reading both could see "not ready" with no container to name.
func (g *Gate) condition() PodCondition {
	if g.drainer.Draining() {
		return PodCondition{Reason: contract.ReasonDraining,
			Message: "the pod is being deleted: the gate fails its health checks and drains"}
	}
	var msg string
	switch why := g.agg.NotReady(); {
	case len(why) > 0:
		msg = "containers not ready: " + strings.Join(why, ", ")
	case g.restarting():
		msg = "a container is being restarted (its preStop hook runs)"
	case g.status != nil && !g.statusSeen.Load():
		msg = "waiting for the status source's first report of the containers"
	default:
		return PodCondition{Ready: true}
	}
	return PodCondition{Reason: contract.ReasonContainersNotReady, Message: msg}
}

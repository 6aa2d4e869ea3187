// Package kill is the kubelet's stop sequence for one container: the
// preStop hook (which eats into the grace period), SIGTERM, then SIGKILL
// once the grace period is over, but never sooner than MinGrace after
// SIGTERM. A kill may be forced at any point (a second delete with
// --grace-period=0, the agent giving up), which ends the hook and sends
// SIGKILL at once. A kill may be held before it begins (Hold: the node
// waiting for the pod's endpoint to be withdrawn), until it is forced or
// the process exits.
package kill

import (
	"context"
	"sync"
	"syscall"
	"time"

	"k8s.io/utils/clock"
)

// MinGrace is the kubelet's minimumGracePeriodInSeconds: whatever the
// preStop hook used up, a container gets this long after SIGTERM.
const MinGrace = 2 * time.Second

// Process is what a kill stops: a container's process group.
type Process interface {
	// Signal sends sig to the container's main process.
	Signal(sig syscall.Signal) error
	// Kill sends SIGKILL to the whole group.
	Kill()
	// Done is closed once the process has exited.
	Done() <-chan struct{}
}

// Kill is a kill under way. The zero value is not usable; use New.
type Kill struct {
	// Probe records that a liveness or startup failure asked for the
	// kill, so the restart that follows is the probe's doing.
	Probe bool

	force     chan struct{}
	forceOnce sync.Once
}

// New returns a kill not yet forced.
func New(probe bool) *Kill {
	return &Kill{Probe: probe, force: make(chan struct{})}
}

// Force makes the kill immediate: a running preStop hook is cancelled and
// SIGKILL follows at once. Safe to call more than once and concurrently.
func (k *Kill) Force() { k.forceOnce.Do(func() { close(k.force) }) }

// Hold runs wait before the stop sequence begins (the node waiting for
// the pod's endpoint to be withdrawn), with a context that ends once the
// kill is forced or p exits: a kill is held up, never called off.
func (k *Kill) Hold(p Process, wait func(context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-p.Done():
		case <-k.force:
		case <-ctx.Done():
		}
		cancel()
	}()
	wait(ctx)
}

// Forced reports whether Force was called.
func (k *Kill) Forced() bool {
	select {
	case <-k.force:
		return true
	default:
		return false
	}
}

// Run stops pr and returns once it has exited or SIGKILL was sent.
// preStop (nil: none) runs only when grace is positive, with a context that
// ends when the grace period is over, the process exits or the kill is
// forced; it must report its own failure. sigtermErr (nil: ignored) hears
// of a SIGTERM that could not be sent.
func (k *Kill) Run(clk clock.WithDelayedExecution, pr Process, grace time.Duration, preStop func(context.Context), sigtermErr func(error)) {
	start := clk.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watchDone := make(chan struct{})
	defer close(watchDone)
	go func() {
		// The hook has no business once the process is gone or the kill
		// is forced.
		select {
		case <-pr.Done():
		case <-k.force:
		case <-watchDone:
		}
		cancel()
	}()
	if preStop != nil && grace > 0 {
		t := clk.AfterFunc(grace, cancel)
		preStop(ctx)
		t.Stop()
	}
	remaining := max(grace-clk.Since(start), MinGrace)
	if err := pr.Signal(syscall.SIGTERM); err != nil && sigtermErr != nil {
		sigtermErr(err)
	}
	t := clk.NewTimer(remaining)
	defer t.Stop()
	select {
	case <-pr.Done():
	case <-t.C():
		pr.Kill()
	case <-k.force:
		pr.Kill()
	}
}

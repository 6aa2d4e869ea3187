package node

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/internal/brokenbuild"
	"github.com/podgate/podgate/node/events"
	"github.com/podgate/podgate/node/hooks"
	"github.com/podgate/podgate/node/kill"
	"github.com/podgate/podgate/node/termination"
)

// beginTermination starts the pod's graceful termination (deletion or
// agent shutdown), or shortens it (package termination). grace nil means
// the pod's terminationGracePeriodSeconds; 0 kills at once.
func (p *pod) beginTermination(grace *int64, remove bool) {
	g := termination.PodGrace(&p.obj.Spec)
	if grace != nil {
		g = time.Duration(*grace) * time.Second
	}
	p.removeAtEnd = p.removeAtEnd || remove
	if !p.term.Begin(p.a.clock.Now(), g) {
		return
	}
	p.stopPrepare()
	// Liveness and startup stop; readiness keeps probing (docs/facts.md §2).
	p.mgr.PodTerminating()
}

// syncTermination stops the pod's containers in package termination's
// order, then ends the worker.
func (p *pod) syncTermination() {
	if p.term.Forced {
		p.forceAll()
	}
	if !p.stopNext() && p.removeAtEnd {
		p.finished = true
	}
}

// stopNext starts the kills whose turn has come (termination.Stop) within
// what is left of the grace period; it reports whether any container
// still runs. A completed pod has no regular container left running: for
// it this stops the native sidecars.
func (p *pod) stopNext() bool {
	all := p.containers()
	view := make([]termination.Container, len(all))
	for i, c := range all {
		view[i] = termination.Container{Sidecar: c.sidecar, Running: c.running, Stopping: c.kill != nil}
	}
	stop, running := termination.Stop(view)
	for _, i := range stop {
		c := all[i]
		p.startKill(c, p.term.Remaining(p.a.clock.Now()), "Stopping container "+c.name, false)
	}
	return running
}

// forceAll kills every process of the pod at once.
func (p *pod) forceAll() {
	for _, c := range p.byName {
		if !c.running {
			continue
		}
		if c.kill == nil {
			p.startKillNow(c)
		} else {
			c.kill.Force()
		}
	}
}

// startKill records Killing and stops c on a goroutine of its own: preStop
// (which eats into grace), SIGTERM to the container's main process, then
// SIGKILL to its whole group once the grace period is over (at least
// kill.MinGrace after SIGTERM). The exit reaches the worker as evExited.
// A probe's kill first waits for Options.Withdrawal, and records Killing
// once it begins.
func (p *pod) startKill(c *container, grace time.Duration, message string, probeKill bool) {
	if p.term.Forced {
		p.startKillNow(c)
		return
	}
	k := kill.New(probeKill)
	c.kill = k
	withdrawal, namespace, name, ip := p.a.opts.Withdrawal, p.namespace, p.name, p.ip
	holdKill := probeKill && withdrawal != nil
	if !holdKill {
		p.record(c, corev1.EventTypeNormal, events.ReasonKilling, message)
	}
	pr := c.proc
	var hook *corev1.LifecycleHandler
	if lc := c.spec.Lifecycle; lc != nil && !brokenbuild.Has(brokenbuild.NoPreStop) {
		hook = lc.PreStop
	}
	p.tasks.Add(1)
	go func() {
		defer p.tasks.Done()
		if holdKill {
			// The not-ready status is written (onProbe); the endpoint
			// goes before the kill begins, and Killing says when it does.
			k.Hold(pr, func(ctx context.Context) { withdrawal.WaitWithdrawn(ctx, namespace, name, ip) })
			p.record(c, corev1.EventTypeNormal, events.ReasonKilling, message)
		}
		var preStop func(context.Context)
		if hook != nil {
			preStop = func(ctx context.Context) { p.runPreStop(ctx, c, hook) }
		}
		k.Run(p.a.clock, pr, grace, preStop, func(err error) {
			p.a.log.Warn("SIGTERM", "pod", p.namespace+"/"+p.name, "container", c.name, "err", err)
		})
	}()
}

func (p *pod) startKillNow(c *container) {
	k := kill.New(false)
	k.Force()
	c.kill = k
	p.record(c, corev1.EventTypeNormal, events.ReasonKilling, "Stopping container "+c.name)
	c.proc.Kill()
}

// runPreStop runs c's preStop handler until it finishes or ctx ends (the
// grace period is over, the process exited, or the kill was forced). A
// failure is recorded; the kill goes on regardless, as the kubelet's does.
func (p *pod) runPreStop(ctx context.Context, c *container, h *corev1.LifecycleHandler) {
	err := hooks.Run(ctx, h, c.probeTarget(p.ip.String()), p.a.clock)
	if err != nil && ctx.Err() == nil {
		p.record(c, corev1.EventTypeWarning, events.ReasonFailedPreStopHook, "PreStopHook failed: "+err.Error())
	}
}

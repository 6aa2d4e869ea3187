package runtime

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/runtime/hooks"
	"github.com/podgate/podgate/runtime/kill"
)

// beginTermination starts the pod's graceful termination (deletion or
// agent shutdown). grace nil means the pod's terminationGracePeriodSeconds;
// 0 kills at once. A second call may only shorten the grace period, as a
// second `kubectl delete --grace-period` can.
func (p *pod) beginTermination(grace *int64, remove bool) {
	now := p.a.clock.Now()
	g := p.podGrace()
	if grace != nil {
		g = time.Duration(*grace) * time.Second
	}
	p.removeAtEnd = p.removeAtEnd || remove
	deadline := now.Add(g)
	if p.terminating {
		if deadline.Before(p.graceDeadline) {
			p.graceDeadline, p.deletionTime = deadline, deadline
			p.deletionGrace = int64(g / time.Second)
		}
		if g == 0 {
			p.forced = true
		}
		return
	}
	p.terminating = true
	p.stopPrepare()
	p.forced = g == 0
	// The API server sets deletionTimestamp to when the grace period ends.
	p.deletionTime, p.graceDeadline = deadline, deadline
	p.deletionGrace = int64(g / time.Second)
	// Liveness and startup stop; readiness keeps probing (docs/facts.md §2).
	p.mgr.PodTerminating()
}

// syncTermination stops the main containers (and a running regular init
// container) together, then the native sidecars one by one in reverse
// order, then ends the worker.
func (p *pod) syncTermination() {
	if p.forced {
		p.forceAll()
	}
	mainsRunning := false
	for _, c := range p.regularContainers() {
		if !c.running {
			continue
		}
		mainsRunning = true
		if c.kill == nil {
			p.startKill(c, p.remainingGrace(), "Stopping container "+c.name, false)
		}
	}
	if mainsRunning || p.stopNextSidecar() {
		return
	}
	if p.removeAtEnd {
		p.finished = true
	}
}

// syncSidecarShutdown stops the sidecars of a pod whose main containers
// have all finished.
func (p *pod) syncSidecarShutdown() {
	p.stopNextSidecar()
}

// stopNextSidecar kills the last running sidecar, if its turn has come;
// it reports whether any sidecar still runs.
func (p *pod) stopNextSidecar() bool {
	for i := len(p.inits) - 1; i >= 0; i-- {
		c := p.inits[i]
		if !c.sidecar || !c.running {
			continue
		}
		if c.kill == nil {
			p.startKill(c, p.remainingGrace(), "Stopping container "+c.name, false)
		}
		return true
	}
	return false
}

func (p *pod) regularContainers() []*container {
	out := append([]*container{}, p.mains...)
	for _, c := range p.inits {
		if !c.sidecar {
			out = append(out, c)
		}
	}
	return out
}

func (p *pod) remainingGrace() time.Duration {
	if d := p.graceDeadline.Sub(p.a.clock.Now()); d > 0 {
		return d
	}
	return 0
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
	if p.forced {
		p.startKillNow(c)
		return
	}
	k := kill.New(probeKill)
	c.kill = k
	withdrawal, namespace, name, ip := p.a.opts.Withdrawal, p.namespace, p.name, p.ip
	holdKill := probeKill && withdrawal != nil
	if !holdKill {
		p.record(c, corev1.EventTypeNormal, ReasonKilling, message)
	}
	pr := c.proc
	var hook *corev1.LifecycleHandler
	if lc := c.spec.Lifecycle; lc != nil {
		hook = lc.PreStop
	}
	p.tasks.Add(1)
	go func() {
		defer p.tasks.Done()
		if holdKill {
			// The not-ready status is written (onProbe); the endpoint
			// goes before the kill begins, and Killing says when it does.
			awaitWithdrawal(withdrawal, k, pr, namespace, name, ip)
			p.record(c, corev1.EventTypeNormal, ReasonKilling, message)
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
	p.record(c, corev1.EventTypeNormal, ReasonKilling, "Stopping container "+c.name)
	c.proc.Kill()
}

// runPreStop runs c's preStop handler until it finishes or ctx ends (the
// grace period is over, the process exited, or the kill was forced). A
// failure is recorded; the kill goes on regardless, as the kubelet's does.
func (p *pod) runPreStop(ctx context.Context, c *container, h *corev1.LifecycleHandler) {
	err := hooks.Run(ctx, h, c.probeTarget(p.ip.String()), p.a.clock)
	if err != nil && ctx.Err() == nil {
		p.record(c, corev1.EventTypeWarning, ReasonFailedPreStopHook, "PreStopHook failed: "+err.Error())
	}
}

package node

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/internal/brokenbuild"
	"github.com/podgate/podgate/node/events"
	"github.com/podgate/podgate/node/proc"
	"github.com/podgate/podgate/node/restart"
	"github.com/podgate/podgate/node/termination"
	"github.com/podgate/podgate/probe/prober"
)

// onExit handles the end of a container instance.
func (p *pod) onExit(c *container, id string, exit proc.Exit) {
	if c.id != id || !c.running {
		return // an instance the worker already gave up on
	}
	now := metav1.NewTime(p.a.clock.Now())
	p.a.owners.Remove(c.proc.Pid)
	c.output.Get(false).End()
	probeKill := c.kill != nil && c.kill.Probe
	c.running, c.proc, c.kill, c.ready, c.started = false, nil, nil, false, false
	p.mgr.ContainerStopped(c.name, id)
	reason := "Completed"
	if exit.Code != 0 {
		reason = "Error"
	}
	p.afterTermination(c, corev1.ContainerStateTerminated{
		ExitCode:    int32(exit.Code),
		Reason:      reason,
		StartedAt:   metav1.NewTime(c.startedAt),
		FinishedAt:  now,
		ContainerID: c.containerID(),
	}, probeKill)
}

// afterTermination decides what follows an instance's end (package
// restart): a restart (at once, or after the CrashLoopBackOff delay) or
// nothing more.
func (p *pod) afterTermination(c *container, term corev1.ContainerStateTerminated, probeKill bool) {
	restarts := !p.term.Ending() && restart.Should(p.obj.Spec.RestartPolicy, c.kind(), term.ExitCode, probeKill)
	who := restart.Who{Pod: p.name, Namespace: p.namespace, UID: p.uid, Container: c.name}
	if event := c.hist.End(term, c.kind(), restarts, who); event != "" {
		p.record(c, corev1.EventTypeWarning, events.ReasonBackOff, event)
	}
	if restarts {
		p.restartDue(c.hist.NotBefore)
	}
}

// onProbe applies a prober Update: events, Ready and Started, and the
// kill a liveness or startup failure asks for.
func (p *pod) onProbe(u prober.Update) {
	c := p.byName[u.Container]
	if c == nil || !c.running || u.ContainerID != c.id {
		return // about an instance that is gone
	}
	if eventType, reason, message, ok := u.Event(); ok {
		if p.term.Terminating && u.Kind == prober.Readiness {
			// A terminating pod fails readiness by design (the gate's
			// drain answers 503 every period): counted in the event,
			// logged once; the gate reports the drain's progress.
			p.a.events.RecordQuietly(p.ref(), events.Event{FieldPath: c.fieldPath(), Type: eventType, Reason: reason, Message: message, Component: events.ComponentKubelet})
		} else {
			p.record(c, eventType, reason, message)
		}
	}
	if brokenbuild.Has(brokenbuild.ExecReadiness) && u.Kind == prober.Readiness && c.spec.ReadinessProbe != nil && c.spec.ReadinessProbe.Exec != nil {
		u.Ready = true
	}
	was := c.ready
	c.ready, c.started = u.Ready, u.Started
	if brokenbuild.Has(brokenbuild.KillFirst) && (u.Restart || c.kill != nil) {
		c.ready = was // the kubelet's order: ready until the process exits
	}
	if !u.Restart || p.term.Terminating || c.kill != nil {
		return
	}

	// podgate's order (docs/facts.md §3, seed 004): the container is already not
	// Ready in this update; publish that — pod status and endpoint — before
	// the Killing event and before the process hears of it. The kubelet
	// kills first and only updates the endpoint after the restart.
	if !brokenbuild.Has(brokenbuild.KillFirst) {
		p.publish()
	}
	grace := termination.ProbeKillGrace(&p.obj.Spec, u.TerminationGracePeriodSeconds)
	p.startKill(c, grace, restart.ProbeKill(c.name, u.Kind.String(), p.obj.Spec.RestartPolicy, c.kind()), true)
}

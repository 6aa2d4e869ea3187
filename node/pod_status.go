package node

import (
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/node/podstatus"
)

// publish writes the pod's status; the EndpointSlice follows from it
// (package local/controllers), so the status that explains an endpoint's
// change is always there first.
func (p *pod) publish() {
	obj := p.obj.DeepCopy()
	obj.Status = p.buildStatus()
	if p.term.Terminating {
		ts := metav1.NewTime(p.term.Deadline)
		obj.DeletionTimestamp = &ts
		g := p.term.Seconds
		obj.DeletionGracePeriodSeconds = &g
	}
	if err := p.a.opts.Pods.UpdatePodStatus(obj); err != nil && !apierrors.IsNotFound(err) {
		p.a.log.Warn("publish pod status", "pod", p.namespace+"/"+p.name, "err", err)
	}
}

// buildStatus is the pod's status now (package podstatus); it keeps the
// conditions it reports, whose transition times the next one carries on.
func (p *pod) buildStatus() corev1.PodStatus {
	now := metav1.NewTime(p.a.clock.Now())
	if p.startTime.IsZero() {
		p.startTime = now
	}
	st := podstatus.Status(p.statusView(), p.conditions, now)
	for _, c := range st.Conditions {
		p.conditions[c.Type] = c
	}
	return st
}

// statusView is what the status depends on of the pod.
func (p *pod) statusView() *podstatus.Pod {
	v := &podstatus.Pod{
		Initialized:    p.initialized,
		FailedInit:     p.failedInit,
		Terminating:    p.term.Terminating,
		RestartPolicy:  p.obj.Spec.RestartPolicy,
		ReadinessGates: p.obj.Spec.ReadinessGates,
		GateConditions: p.gateConds,
		HostIP:         p.a.hostIP,
		PodIP:          p.ip.String(),
		StartTime:      p.startTime,
		QOSClass:       p.qos,
	}
	for _, c := range p.inits {
		v.Inits = append(v.Inits, c.statusView())
	}
	for _, c := range p.mains {
		v.Mains = append(v.Mains, c.statusView())
	}
	return v
}

// statusView is what the status says of c.
func (c *container) statusView() podstatus.Container {
	v := podstatus.Container{
		Name: c.name, Image: c.spec.Image, ID: c.containerID(), Created: c.hist.Created,
		Init: c.init, Sidecar: c.sidecar,
		Running: c.running, StartedAt: c.startedAt, Started: c.started, Ready: c.ready,
		RestartCount: c.hist.RestartCount, LastState: c.hist.LastState, Terminated: c.hist.Terminated, Waiting: c.hist.Waiting,
		Succeeded: c.hist.Succeeded, Done: c.hist.Done,
	}
	if c.pullWaiting != nil {
		// Its image is not on the node: it never ran (package node/imagepull).
		w := *c.pullWaiting
		v.Waiting = &w
	}
	switch {
	case c.sec.Refused != "":
		v.SetupError = c.sec.Refused
	case c.cfg.Blocked():
		v.SetupError = c.cfg.Message()
	}
	return v
}

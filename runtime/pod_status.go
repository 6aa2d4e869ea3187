package runtime

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pod condition reasons, as the kubelet writes them.
const (
	reasonContainersNotReady       = "ContainersNotReady"
	reasonContainersNotInitialized = "ContainersNotInitialized"
	reasonPodCompleted             = "PodCompleted"
	reasonReadinessGatesNotReady   = "ReadinessGatesNotReady"
)

// publish writes the pod's status; the EndpointSlice follows from it
// (package localcluster), so the status that explains an endpoint's
// change is always there first.
func (p *pod) publish() {
	obj := p.obj.DeepCopy()
	obj.Status = p.buildStatus()
	if p.terminating {
		ts := metav1.NewTime(p.deletionTime)
		obj.DeletionTimestamp = &ts
		g := p.deletionGrace
		obj.DeletionGracePeriodSeconds = &g
	}
	if err := p.a.opts.Pods.UpdatePodStatus(obj); err != nil && !apierrors.IsNotFound(err) {
		p.a.log.Warn("publish pod status", "pod", p.namespace+"/"+p.name, "err", err)
	}
}

func (p *pod) buildStatus() corev1.PodStatus {
	now := metav1.NewTime(p.a.clock.Now())
	if p.startTime.IsZero() {
		p.startTime = now
	}
	st := corev1.PodStatus{
		Phase:     p.phase(),
		HostIP:    p.a.hostIP,
		HostIPs:   []corev1.HostIP{{IP: p.a.hostIP}},
		PodIP:     p.ip.String(),
		PodIPs:    []corev1.PodIP{{IP: p.ip.String()}},
		StartTime: &p.startTime,
		QOSClass:  p.qos,
	}
	for _, c := range p.inits {
		st.InitContainerStatuses = append(st.InitContainerStatuses, p.containerStatus(c))
	}
	for _, c := range p.mains {
		st.ContainerStatuses = append(st.ContainerStatuses, p.containerStatus(c))
	}
	p.setConditions(&st, now)
	return st
}

func (p *pod) containerStatus(c *container) corev1.ContainerStatus {
	started := c.running && c.started
	cs := corev1.ContainerStatus{
		Name:                 c.name,
		Image:                c.spec.Image,
		ImageID:              c.spec.Image,
		ContainerID:          c.containerID(),
		RestartCount:         c.restartCount,
		LastTerminationState: c.lastState,
		Started:              &started,
	}
	switch {
	case c.running:
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(c.startedAt)}
		cs.Ready = c.ready && c.started
	case c.waiting != nil:
		w := *c.waiting
		cs.State.Waiting = &w
	case c.terminated != nil:
		t := *c.terminated
		cs.State.Terminated = &t
		// A regular init container that completed counts as ready.
		cs.Ready = c.succeeded
	case c.blocked():
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: setupMessage(c.setup)}
	default:
		// Init containers wait as PodInitializing, and so do the main
		// containers until the init containers are done.
		reason := "ContainerCreating"
		if c.init || !p.initialized {
			reason = "PodInitializing"
		}
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason}
	}
	if !c.created {
		cs.ContainerID = ""
	}
	return cs
}

// phase is the kubelet's getPhase for the containers podgate tracks.
func (p *pod) phase() corev1.PodPhase {
	if p.failedInit {
		return corev1.PodFailed
	}
	if !p.initialized {
		return corev1.PodPending
	}
	var running, waiting, stopped, succeeded int
	for _, c := range p.mains {
		switch {
		case c.running:
			running++
		case c.terminated != nil:
			stopped++
			if c.terminated.ExitCode == 0 {
				succeeded++
			}
		case c.lastState.Terminated != nil:
			stopped++ // waiting to be restarted: it has run
		default:
			waiting++
		}
	}
	policy := p.obj.Spec.RestartPolicy
	switch {
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped > 0 && p.terminating && !p.anyRunning():
		// A deleted pod whose containers all stopped ends in a terminal
		// phase, as kubelets since 1.27 report.
		if stopped == succeeded {
			return corev1.PodSucceeded
		}
		return corev1.PodFailed
	case stopped > 0:
		switch {
		case policy == corev1.RestartPolicyAlways:
			return corev1.PodRunning
		case stopped == succeeded && p.allMainsDone():
			return corev1.PodSucceeded
		case policy == corev1.RestartPolicyNever:
			return corev1.PodFailed
		}
		return corev1.PodRunning
	}
	return corev1.PodPending
}

func (p *pod) anyRunning() bool {
	for _, c := range p.byName {
		if c.running {
			return true
		}
	}
	return false
}

// setConditions computes the pod conditions in the kubelet's order and
// keeps each one's lastTransitionTime until its status changes.
func (p *pod) setConditions(st *corev1.PodStatus, now metav1.Time) {
	phase := st.Phase
	completed := phase == corev1.PodSucceeded

	var notInit []string
	for _, c := range p.inits {
		switch {
		case c.sidecar && c.running && c.started:
		case c.succeeded:
		case p.initialized && c.sidecar:
		default:
			notInit = append(notInit, c.name)
		}
	}
	initialized := cond(corev1.PodInitialized, p.initialized || len(p.inits) == 0, "", "")
	if !initialized.isTrue() {
		initialized.reason = reasonContainersNotInitialized
		initialized.message = fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(notInit, " "))
	}

	// ContainersReady: every sidecar and every main container is Ready.
	var unready []string
	for _, c := range p.inits {
		if c.sidecar && !(c.running && c.ready && c.started) {
			unready = append(unready, c.name)
		}
	}
	for _, c := range p.mains {
		if !(c.running && c.ready && c.started) {
			unready = append(unready, c.name)
		}
	}
	containersReady := cond(corev1.ContainersReady, len(unready) == 0, "", "")
	if !containersReady.isTrue() {
		containersReady.reason = reasonContainersNotReady
		containersReady.message = fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	}
	if completed {
		containersReady = cond(corev1.ContainersReady, false, reasonPodCompleted, "")
	}

	ready := readyCondition(containersReady, p.obj.Spec.ReadinessGates, p.gateConds)

	toStart := cond(corev1.PodReadyToStartContainers, true, "", "")
	if p.terminating && !p.anyRunning() {
		// The sandbox is gone once everything stopped.
		toStart = cond(corev1.PodReadyToStartContainers, false, "", "")
	}
	for _, c := range []podCond{toStart, initialized, ready, containersReady} {
		st.Conditions = append(st.Conditions, p.transition(c, now))
	}
	sched, ok := p.conditions[corev1.PodScheduled]
	if !ok {
		// Bound at creation (spec.nodeName set, no scheduler involved):
		// the kubelet reports PodScheduled True all the same, from when
		// it first saw the pod.
		sched = corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now}
		p.conditions[corev1.PodScheduled] = sched
	}
	st.Conditions = append(st.Conditions, sched)
}

// podCond is a condition before its transition time is known.
type podCond struct {
	typ             corev1.PodConditionType
	status          corev1.ConditionStatus
	reason, message string
}

func cond(t corev1.PodConditionType, ok bool, reason, message string) podCond {
	s := corev1.ConditionFalse
	if ok {
		s = corev1.ConditionTrue
	}
	return podCond{typ: t, status: s, reason: reason, message: message}
}

func (c podCond) isTrue() bool { return c.status == corev1.ConditionTrue }

func (p *pod) transition(c podCond, now metav1.Time) corev1.PodCondition {
	prev, ok := p.conditions[c.typ]
	at := now
	if ok && prev.Status == c.status {
		at = prev.LastTransitionTime
	}
	pc := corev1.PodCondition{Type: c.typ, Status: c.status, Reason: c.reason, Message: c.message, LastTransitionTime: at}
	p.conditions[c.typ] = pc
	return pc
}

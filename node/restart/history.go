package restart

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podgate/podgate/node/backoff"
)

// History is one container's instances as its status tells them, and when
// the next one may start. The zero value is a container never started.
type History struct {
	// Created: an instance has existed.
	Created      bool
	RestartCount int32
	// Terminated is the current state, when it is that: the last
	// instance ended for good.
	Terminated *corev1.ContainerStateTerminated
	LastState  corev1.ContainerState
	// Waiting is CrashLoopBackOff while the restart is held back.
	Waiting *corev1.ContainerStateWaiting
	// NotBefore is when the next instance may start.
	NotBefore time.Time
	// Succeeded: a regular init container that exited 0.
	Succeeded bool
	// Done: it will not be started again.
	Done bool

	backoff backoff.CrashLoop
}

// Who names a container in the kubelet's back-off messages.
type Who struct {
	Pod, Namespace string
	UID            types.UID
	Container      string
}

// Start records a new instance: after the first, a restart counted; a
// finished instance it replaces becomes the last state.
func (h *History) Start() {
	if h.Created {
		h.RestartCount++
	}
	h.Created = true
	h.Waiting = nil
	if h.Terminated != nil {
		h.LastState = corev1.ContainerState{Terminated: h.Terminated}
		h.Terminated = nil
	}
}

// End records the end of the current instance, term, of a container of
// kind. When restarts is false (Should says no, or the pod is ending) the
// container is Done and term its state. Otherwise term becomes the last
// state and NotBefore the end plus the CrashLoopBackOff delay; while that
// is held back the container waits as CrashLoopBackOff, and End returns
// the BackOff event's message ("" for an immediate restart: no event).
func (h *History) End(term corev1.ContainerStateTerminated, kind Kind, restarts bool, who Who) (backOffEvent string) {
	if !restarts {
		h.Terminated = &term
		h.Done = true
		h.Succeeded = kind == Init && term.ExitCode == 0
		return ""
	}
	h.LastState = corev1.ContainerState{Terminated: &term}
	h.Terminated = nil
	delay := h.backoff.Next(term.StartedAt.Time, term.FinishedAt.Time)
	h.NotBefore = term.FinishedAt.Add(delay)
	if delay == 0 {
		return ""
	}
	waiting, event := backOff(who.Pod, who.Namespace, who.UID, who.Container, delay)
	h.Waiting = &waiting
	return event
}

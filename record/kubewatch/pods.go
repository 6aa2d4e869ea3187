package kubewatch

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/record"
)

// podSeen is what was last recorded of one pod.
type podSeen struct {
	uid        types.UID
	containers map[string]record.State
	conditions map[corev1.PodConditionType]record.Condition
}

// podLocked records what changed in p since it was last seen: each
// container's status, each condition, and the gate's verdict with its
// condition. A pod of the same name but another UID starts afresh. The
// time is the observation's: startedAt and finishedAt have whole seconds
// on the wire.
func (w *Watcher) podLocked(p *corev1.Pod, now time.Time) {
	k := key(&p.ObjectMeta)
	seen := w.pods[k]
	if seen == nil || seen.uid != p.UID {
		seen = &podSeen{uid: p.UID, containers: map[string]record.State{}, conditions: map[corev1.PodConditionType]record.Condition{}}
		w.pods[k] = seen
	}
	fact := func(container string) record.Fact {
		return record.Fact{Time: now, Namespace: p.Namespace, Pod: p.Name, Container: container}
	}
	sidecars := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		sidecars[c.Name] = c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			st := containerState(cs, sidecars[cs.Name])
			if old, ok := seen.containers[cs.Name]; ok && sameState(old, st) {
				continue
			}
			seen.containers[cs.Name] = st
			f := fact(cs.Name)
			f.Kind, f.State = record.KindContainer, &st
			w.cfg.Sink.Record(f)
		}
	}
	for _, c := range p.Status.Conditions {
		cond := record.Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message}
		if old, ok := seen.conditions[c.Type]; ok && old == cond {
			continue
		}
		seen.conditions[c.Type] = cond
		f := fact("")
		f.Kind, f.Condition = record.KindCondition, &cond
		w.cfg.Sink.Record(f)
		if c.Type == contract.ContainersReadyCondition {
			// The gate writes its verdict on every container of the pod
			// as this condition: ready or not, and whom it waits for.
			g := fact("")
			g.Kind, g.Gate = record.KindGate, &record.Gate{Ready: c.Status == corev1.ConditionTrue, Message: c.Message}
			w.cfg.Sink.Record(g)
		}
	}
}

// containerState is the recording's view of a container status.
func containerState(cs corev1.ContainerStatus, sidecar bool) record.State {
	st := record.State{
		RestartCount: cs.RestartCount, Ready: cs.Ready, ContainerID: cs.ContainerID, Sidecar: sidecar,
	}
	if cs.Started != nil {
		started := *cs.Started
		st.Started = &started
	}
	switch s := cs.State; {
	case s.Running != nil:
		st.State = "running"
	case s.Terminated != nil:
		code := s.Terminated.ExitCode
		st.State, st.Reason, st.Message, st.ExitCode = "terminated", s.Terminated.Reason, s.Terminated.Message, &code
	case s.Waiting != nil:
		st.State, st.Reason, st.Message = "waiting", s.Waiting.Reason, s.Waiting.Message
	default:
		// The API's default for a container with no state: waiting.
		st.State = "waiting"
	}
	return st
}

// sameState compares two states by value (Started and ExitCode are
// pointers).
func sameState(a, b record.State) bool {
	eq := func(x, y *bool) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eqCode := func(x, y *int32) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	if !eq(a.Started, b.Started) || !eqCode(a.ExitCode, b.ExitCode) {
		return false
	}
	a.Started, b.Started, a.ExitCode, b.ExitCode = nil, nil, nil, nil
	return a == b
}

package gatestatus

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podgate/podgate/gate/contract"
)

// forgetAfter is how long a deleted pod is remembered.
const forgetAfter = 5 * time.Minute

// checkLoop looks for gates that never connected every CheckInterval, and
// forgets what it knew of pods long gone.
func (s *Service) checkLoop(ctx context.Context) {
	t := s.clock.NewTicker(s.opts.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			if s.pods.isSynced() {
				s.checkConnected()
			}
			s.checks.Add(1)
		}
	}
}

// checkConnected writes GateNotConnected, once per pod, on each injected
// pod whose gate is configured with a status source URL and whose gate
// container has run longer than GateGrace (counted from
// this service's start at the earliest: a gate that talked to the
// service before it restarted reconnects within moments) without one
// accepted request from the pod: its status source is wrong, or the
// service is unreachable from it, and `kubectl describe pod` should say
// so rather than the pod staying unready in silence.
func (s *Service) checkConnected() {
	now := s.clock.Now()
	live := map[types.UID]bool{}
	for _, p := range s.pods.live() {
		live[p.UID] = true
		started, ok := gateRunningSince(p)
		if !ok || p.Spec.HostNetwork || !hasGateReadinessGate(p) || !usesStatusURL(p) {
			continue
		}
		if started.Before(s.started) {
			started = s.started
		}
		running := now.Sub(started)
		if running <= s.opts.GateGrace {
			continue
		}
		s.connMu.Lock()
		skip := s.connected[p.UID] || s.reported[p.UID]
		s.reported[p.UID] = true
		s.connMu.Unlock()
		if skip {
			continue
		}
		s.events.warnLimited(p, eventNotConnected, "", fmt.Sprintf(
			"the gate container %q has been running for %s and has not connected to podgate's node status service on node %s (port %d): its %s should be http://$(%s):%d, and the pod must reach the node's address on that port",
			contract.GateContainerName, running.Round(time.Second), s.opts.Node, contract.NodeStatusPort, contract.EnvStatusSource, contract.EnvHostIP, contract.NodeStatusPort))
	}
	s.connMu.Lock()
	for _, m := range []map[types.UID]bool{s.connected, s.reported} {
		for uid := range m {
			if !live[uid] {
				delete(m, uid)
			}
		}
	}
	s.connMu.Unlock()
	s.events.forget(live)
	s.pods.forget(now.Add(-forgetAfter))
}

// gateRunningSince is when the pod's gate container started running, if
// the pod has one and it runs.
func gateRunningSince(p *corev1.Pod) (time.Time, bool) {
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			if cs.Name == contract.GateContainerName && cs.State.Running != nil {
				return cs.State.Running.StartedAt.Time, true
			}
		}
	}
	return time.Time{}, false
}

func hasGateReadinessGate(p *corev1.Pod) bool {
	if contract.GateContainer(&p.Spec) == nil {
		return false
	}
	for _, g := range p.Spec.ReadinessGates {
		if g.ConditionType == contract.ContainersReadyCondition {
			return true
		}
	}
	return false
}

// usesStatusURL: the pod's gate is configured to reach a status source by
// URL (the node status service). A gate of an older injection reads the
// API server itself (PODGATE_STATUS_SOURCE=kubernetes) and never comes
// here: that is no fault to report.
func usesStatusURL(p *corev1.Pod) bool {
	g := contract.GateContainer(&p.Spec)
	for _, e := range g.Env {
		if e.Name == contract.EnvStatusSource {
			return strings.HasPrefix(e.Value, "http://") || strings.HasPrefix(e.Value, "https://")
		}
	}
	return false
}

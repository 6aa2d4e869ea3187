package node

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/node/events"
	"github.com/podgate/podgate/node/podsetup"
)

// PodSetupFunc gives one pod what the node adds to it besides its spec
// (Options.PodSetup): see podsetup.Func.
type PodSetupFunc = podsetup.Func

// PodExtras is what a node adds to one pod (node/kube: the pod's
// service-account credentials and how to reach the API server): see
// podsetup.Extras.
type PodExtras = podsetup.Extras

// evPrepared: PodExtras.Prepare succeeded; containers may start.
type evPrepared struct{}

// startPrepare runs the pod's Prepare until it succeeds or the pod
// terminates (podsetup.Retry, each failure a FailedMount event); without
// one, the pod is prepared at once.
func (p *pod) startPrepare() {
	if p.extras.Prepare == nil {
		p.prepared = true
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancelPrepare = cancel
	p.tasks.Add(1)
	go func() {
		defer p.tasks.Done()
		failed := func(err error) { p.record(nil, corev1.EventTypeWarning, events.ReasonFailedMount, err.Error()) }
		if podsetup.Retry(ctx, p.extras.Prepare, p.a.clock, failed) {
			p.post(evPrepared{})
		}
	}()
}

// stopPrepare ends a Prepare still under way.
func (p *pod) stopPrepare() {
	if p.cancelPrepare != nil {
		p.cancelPrepare()
	}
}

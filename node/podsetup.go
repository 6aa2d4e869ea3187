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

// startPrepare runs the pod's Prepare and sets its volumes up until both
// succeed or the pod terminates (podsetup.Retry, each failure a
// FailedMount event); without either, the pod is prepared at once. Once
// prepared, the volumes are written again every Options.VolumeResync
// (the kubelet's sync: configMap and secret updates reach the files)
// until the pod terminates.
func (p *pod) startPrepare() {
	prepare := p.extras.Prepare
	if p.vols != nil {
		extra := prepare
		prepare = func(ctx context.Context) error {
			if extra != nil {
				if err := extra(ctx); err != nil {
					return err
				}
			}
			return p.vols.SetUp(ctx)
		}
	}
	if prepare == nil {
		p.prepared = true
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancelPrepare = cancel
	p.tasks.Add(1)
	go func() {
		defer p.tasks.Done()
		failed := func(err error) { p.record(nil, corev1.EventTypeWarning, events.ReasonFailedMount, err.Error()) }
		if !podsetup.Retry(ctx, prepare, p.a.clock, failed) {
			return
		}
		p.post(evPrepared{})
		if p.vols != nil {
			p.resyncVolumes(ctx)
		}
	}()
}

// resyncVolumes writes the pod's volumes again every VolumeResync until
// ctx ends.
func (p *pod) resyncVolumes(ctx context.Context) {
	for {
		t := p.a.clock.NewTimer(p.a.opts.VolumeResync)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		if err := p.vols.SetUp(ctx); err != nil && ctx.Err() == nil {
			p.a.log.Warn("resync the pod's volumes; the files in place stay", "pod", p.namespace+"/"+p.name, "err", err)
		}
	}
}

// stopPrepare ends a Prepare still under way.
func (p *pod) stopPrepare() {
	if p.cancelPrepare != nil {
		p.cancelPrepare()
	}
}

package kube

import (
	"context"

	discoveryclient "k8s.io/client-go/kubernetes/typed/discovery/v1"
	"k8s.io/client-go/rest"

	"github.com/podgate/podgate/node/kube/withdrawal"
)

// startWithdrawals runs the EndpointSlice watch that holds liveness and
// startup kills until the endpoint is withdrawn, and returns it with its
// stop; nil on the loopback network (no EndpointSlice lists a loopback
// address) or when the node may not read EndpointSlices (said once).
func (cfg Config) startWithdrawals(ctx context.Context, rc *rest.Config) (*withdrawal.Watch, func()) {
	nothing := func() {}
	if cfg.Network == nil {
		return nil, nothing
	}
	client, err := discoveryclient.NewForConfig(rc)
	if err == nil {
		var ok bool
		if ok, err = withdrawal.CanRead(ctx, client); err == nil && !ok {
			cfg.Logger.Warn("this node may not read EndpointSlices: a liveness or startup kill will not wait for the pod's endpoint to be withdrawn; bind ClusterRole "+withdrawal.Role+" to group system:nodes (docs/kubernetes.md)",
				"node", cfg.NodeName)
			return nil, nothing
		}
	}
	var w *withdrawal.Watch
	if err == nil {
		w, err = withdrawal.New(client, cfg.WithdrawTimeout, cfg.Logger)
	}
	if err != nil {
		cfg.Logger.Warn("EndpointSlices: a liveness or startup kill will not wait for the pod's endpoint to be withdrawn", "err", err)
		return nil, nothing
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := w.Start(wctx)
	return w, func() { cancel(); <-done }
}

// stopBoth stops a, then b.
func stopBoth(a, b func()) func() { return func() { a(); b() } }

package readiness

import (
	"context"

	"github.com/podgate/podgate/probe/prober"
)

// watchLiveness runs the gate's copy of a container's liveness probe (a
// watched probe) on the kubelet's schedule: the first tick after
// initialDelaySeconds (counted from the gate's start, the closest it
// knows to the container's), then on a fixed-rate grid of periodSeconds,
// each tick a kubelet tick (errored attempts retried, then dropped). The
// kubelet runs the probe itself on the container; the gate's copy only
// decides when the container stops counting as ready (LivenessResult:
// at failureThreshold − 1 failures in a row), so a stalled or restarting
// gate never costs the container a liveness failure.
//
// The two schedules are not in phase (the kubelet's starts with the
// container, the gate's with the gate), which is why the gate acts one
// failure early: its count reaches threshold − 1 at most one period after
// the kubelet's did, so the endpoint leaves at the latest as the kubelet
// kills, and usually a period before.
func (a *Aggregator) watchLiveness(ctx context.Context, c *state) {
	if d := c.liveTiming.InitialDelay; d > 0 {
		if !a.sleep(ctx, d, nil) {
			return
		}
	}
	anchor := a.clock.Now()
	threshold := prober.FailureThresholdOf(c.Liveness)
	for {
		out := a.opts.Runner.Run(ctx, c.Liveness, a.opts.Target)
		if ctx.Err() != nil {
			return
		}
		a.LivenessResult(c.Name, out, threshold)
		if a.opts.OnWatched != nil {
			a.opts.OnWatched(c.Name, out)
		}
		now := a.clock.Now()
		next := prober.NextTick(anchor, c.liveTiming.Period, now)
		anchor = next
		if !a.sleep(ctx, next.Sub(now), nil) {
			return
		}
	}
}

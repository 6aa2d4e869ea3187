package readiness

import (
	"context"
	"sync"

	"github.com/podgate/podgate/probe"
)

// Recheck probes, once and now, every container whose readiness probe is
// aggressive (Knative's periodSeconds: 0) and that counts as ready, and
// marks down (Suspect) each whose attempt fails, so that a health check
// answers from the containers' state at its moment, as queue-proxy's,
// which probes on every check. After the first readiness an aggressive
// probe's worker ticks only every second with the kubelet's failure
// threshold; without this a check 400 ms after the serving port closed
// would still be answered ready.
//
// Concurrent calls share one round (a call that arrives while a round is
// in flight waits for that round), as queue-proxy's checks share a probe
// in flight. The attempts do not count toward the thresholds (like the
// attempts of a container marked down) and an errored one changes
// nothing. Without an aggressive probe it returns at once.
func (a *Aggregator) Recheck() {
	if !a.anyAggressive {
		return
	}
	a.mu.Lock()
	if round := a.round; round != nil {
		a.mu.Unlock()
		<-round
		return
	}
	var due []*state
	for _, c := range a.containers {
		if c.aggressive && c.Probe != nil && c.verdict && c.suspect == "" {
			due = append(due, c)
		}
	}
	if len(due) == 0 {
		a.mu.Unlock()
		return
	}
	round := make(chan struct{})
	a.round = round
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.round = nil
		a.mu.Unlock()
		close(round)
	}()
	if len(due) == 1 {
		a.recheck(due[0])
		return
	}
	var wg sync.WaitGroup
	for _, c := range due {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.recheck(c)
		}()
	}
	wg.Wait()
}

// recheck is one attempt of Recheck. It runs beside the container's
// worker, so it leaves the worker's protocol order alone: with HTTP/2
// auto-detection a plain-HTTP probe passes over either protocol.
func (a *Aggregator) recheck(c *state) {
	// Bounded by the probe's timeout; the caller leaving does not cut the
	// round that other checks may share.
	ctx := context.Background()
	out := a.attemptFast(ctx, c)
	if !out.Result.Passed() && out.Result != probe.Error && a.opts.HTTP2AutoDetection && isPlainHTTP(c.fastProbe) {
		if h2c := a.opts.Runner.AttemptH2C(ctx, c.fastProbe, a.opts.Target, c.timing.Timeout); h2c.Result.Passed() {
			out = h2c
		}
	}
	if a.opts.OnAttempt != nil {
		a.opts.OnAttempt(c.Name, out)
	}
	if out.Result == probe.Failure {
		a.Suspect(c.Name, "failed a health check's probe: "+out.Message)
	}
}

package readiness

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/podgate/podgate/probe"
	"github.com/podgate/podgate/probe/prober"
)

// Fast probing: a periodSeconds: 0 probe that is not ready yet, or a
// container the proxy found refusing connections. Knative retries every
// 50 ms; the gate starts at 1 ms and backs off to 5 ms, so a container is
// seen accepting within a few milliseconds, and after 10 s of a container
// not coming back slows to 100 ms, so a crash-looping container does not
// cost a core. Only changes are logged, never the attempts.
const (
	fastMinInterval  = time.Millisecond
	fastMaxInterval  = 5 * time.Millisecond
	fastEpisode      = 10 * time.Second
	fastSlowInterval = 100 * time.Millisecond
)

// work is one container's probe loop. Regular ticks follow the kubelet: the
// first at once (after initialDelaySeconds, counted from the gate's start,
// the closest it knows to the container's), then on a fixed-rate grid of
// periodSeconds; a slow attempt drops the ticks it overran. Fast mode
// probes back to back with a short backoff.
func (a *Aggregator) work(ctx context.Context, c *state) {
	if d := c.timing.InitialDelay; d > 0 {
		if !a.sleep(ctx, d, nil) {
			return
		}
	}
	anchor := a.clock.Now()
	backoff := fastMinInterval
	for {
		a.mu.Lock()
		fast := c.fast()
		a.mu.Unlock()
		if fast || c.Probe != nil {
			out := a.attempt(ctx, c, fast)
			if ctx.Err() != nil {
				return
			}
			a.record(c, out, fast)
		}

		now := a.clock.Now()
		a.mu.Lock()
		fast, fastSince := c.fast(), c.fastSince
		a.mu.Unlock()
		var wait time.Duration
		switch {
		case fast:
			limit := fastMaxInterval
			if now.Sub(fastSince) > fastEpisode {
				limit = fastSlowInterval
			}
			wait, backoff = min(backoff, limit), min(backoff*2, limit)
			anchor = now
		case c.Probe == nil:
			wait, backoff = -1, fastMinInterval // nothing to do until kicked
		default:
			backoff = fastMinInterval
			next := prober.NextTick(anchor, c.timing.Period, now)
			anchor, wait = next, next.Sub(now)
		}
		if !a.sleep(ctx, wait, c.kick) {
			return
		}
	}
}

// sleep waits d (forever if d < 0), or until kick; false when ctx ended.
func (a *Aggregator) sleep(ctx context.Context, d time.Duration, kick <-chan struct{}) bool {
	var timeout <-chan time.Time
	if d >= 0 {
		t := a.clock.NewTimer(d)
		defer t.Stop()
		timeout = t.C()
	}
	select {
	case <-ctx.Done():
		return false
	case <-timeout:
	case <-kick:
	}
	return true
}

// attempt is one probe of the container: a fast attempt or a kubelet
// tick. With HTTP/2 auto-detection a plain-HTTP probe passes over h2c or
// HTTP/1.1, as queue-proxy's. queue-proxy tries h2c first; the gate tries
// HTTP/1.1 first, then h2c, and keeps the order that last passed, so the
// verdict is the same, a container costs one request per probe once its
// protocol is known, and one that speaks both is still sent HTTP/1.1:
// only a container that failed HTTP/1.1 and passed h2c counts as
// speaking h2c only. When both fail, the HTTP/1.1 outcome (the
// kubelet's) is the result.
func (a *Aggregator) attempt(ctx context.Context, c *state, fast bool) probe.Outcome {
	http1 := func() probe.Outcome {
		if fast {
			return a.attemptFast(ctx, c)
		}
		return a.opts.Runner.Run(ctx, c.Probe, a.opts.Target)
	}
	p := c.Probe
	if fast {
		p = c.fastProbe
	}
	if !a.opts.HTTP2AutoDetection || !isPlainHTTP(p) {
		return http1()
	}
	h2c := func() probe.Outcome {
		return a.opts.Runner.AttemptH2C(ctx, p, a.opts.Target, c.timing.Timeout)
	}
	first, second := h2c, http1
	if !c.h2cFirst {
		first, second = http1, h2c
	}
	out := first()
	if !out.Result.Passed() && ctx.Err() == nil {
		out2 := second()
		// Report HTTP/1.1's verdict when neither passes.
		if out2.Result.Passed() || c.h2cFirst {
			out = out2
		}
		if out2.Result.Passed() {
			c.h2cFirst = !c.h2cFirst
		}
	}
	if out.Result.Passed() && c.probesUserPort {
		a.servingH2C.Store(c.h2cFirst)
	}
	return out
}

// attemptFast makes one attempt, without the retries of a kubelet tick
// (the next attempt comes in milliseconds anyway).
func (a *Aggregator) attemptFast(ctx context.Context, c *state) probe.Outcome {
	p := c.fastProbe
	timeout := c.timing.Timeout
	if timeout <= 0 {
		timeout = prober.DefaultTimeout // a serving container's port check
	}
	switch {
	case p.TCPSocket != nil:
		// A plain dial: same verdict and message as the kubelet's, without
		// its SO_LINGER, whose close waits for the FIN's ACK (milliseconds
		// on loopback), which would delay every container seen coming up.
		host := p.TCPSocket.Host
		if host == "" {
			host = a.opts.Target.PodIP
		}
		return a.dial(ctx, net.JoinHostPort(host, strconv.Itoa(p.TCPSocket.Port.IntValue())), timeout)
	case p.GRPC != nil:
		// The kubelet's gRPC probe dials blocking: a closed port holds the
		// attempt for the whole timeout. A plain dial first sees a closed
		// port in microseconds.
		addr := net.JoinHostPort(a.opts.Target.PodIP, strconv.Itoa(int(p.GRPC.Port)))
		if out := a.dial(ctx, addr, timeout); out.Result != probe.Success {
			return out
		}
	}
	return a.opts.Runner.Attempt(ctx, p, a.opts.Target, timeout)
}

// dial is a TCP check: Success when something accepts.
func (a *Aggregator) dial(ctx context.Context, addr string, timeout time.Duration) probe.Outcome {
	start := a.clock.Now()
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return probe.Outcome{Result: probe.Failure, Message: err.Error(), Attempts: 1, Duration: a.clock.Since(start)}
	}
	_ = conn.Close()
	return probe.Outcome{Result: probe.Success, Attempts: 1, Duration: a.clock.Since(start)}
}

// record applies one attempt. Regular ticks and the attempts of an
// aggressive probe that is not ready yet count toward the thresholds; the
// extra attempts of a container marked down do not (they only clear the
// mark), or a 10 s probe would fail its threshold in milliseconds.
func (a *Aggregator) record(c *state, out probe.Outcome, fast bool) {
	a.mu.Lock()
	now := a.clock.Now()
	counted := c.Probe != nil && (!fast || (c.aggressive && !c.verdict))
	c.attempts++
	c.last, c.lastAt = out, now
	switch {
	case out.Result == probe.Error:
		// Dropped, as the kubelet drops it: nothing changes.
	case out.Result.Passed():
		if c.suspect != "" {
			a.log.Info("container passes its probe again", "container", c.Name, "after", now.Sub(c.fastSince).String())
			c.suspect = ""
			if c == a.serving {
				close(a.back)
				a.back = make(chan struct{})
			}
		}
		if c.liveHold != "" && c.liveDown {
			// It failed and passes again: the container that failed its
			// liveness probe was replaced.
			// Its failure count stays: if it was not replaced after all,
			// the next failure drops readiness again at once.
			c.liveHold, c.liveDown = "", false
		}
		if counted && c.counter.Observe(true, c.timing.SuccessThreshold, c.timing.FailureThreshold) == prober.Success && !c.verdict {
			c.verdict = true
			a.log.Info("container ready", "container", c.Name, "attempts", c.attempts)
		}
	default:
		if c.liveHold != "" {
			c.liveDown = true
		}
		if counted && c.counter.Observe(false, c.timing.SuccessThreshold, c.timing.FailureThreshold) == prober.Failure && c.verdict {
			c.verdict = false
			c.fastSince = now
			failures, _ := c.counter.Streak()
			a.log.Info("container not ready", "container", c.Name, "failures", failures, "message", out.Message)
		}
	}
	a.recomputeLocked()
	a.mu.Unlock()
	if a.opts.OnAttempt != nil {
		a.opts.OnAttempt(c.Name, out)
	}
}

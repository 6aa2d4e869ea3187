package prober

import (
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// This file is the one clock-free core of probing shared by the node
// agent's workers and the gate's aggregator: Kubernetes' probe defaults,
// consecutive-result thresholds, and the fixed-rate grid. Nothing here
// holds a goroutine or reads a clock; times come in as arguments.

// Defaults the API server fills in when a probe field is left at 0
// (docs/facts.md §2).
const (
	DefaultPeriodSeconds    = 10
	DefaultTimeoutSeconds   = 1
	DefaultSuccessThreshold = 1
	DefaultFailureThreshold = 3

	DefaultPeriod  = DefaultPeriodSeconds * time.Second
	DefaultTimeout = DefaultTimeoutSeconds * time.Second

	// AggressiveSteadyPeriod re-checks a Knative aggressive probe
	// (periodSeconds 0) once it passed: the kubelet's shortest period.
	AggressiveSteadyPeriod = time.Second
)

// SetDefaults fills the fields the API server defaults on a probe that were
// left at zero: timing, thresholds, and httpGet path and scheme.
func SetDefaults(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = DefaultPeriodSeconds
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = DefaultTimeoutSeconds
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = DefaultSuccessThreshold
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = DefaultFailureThreshold
	}
	if h := p.HTTPGet; h != nil {
		if h.Path == "" {
			h.Path = "/"
		}
		if h.Scheme == "" {
			h.Scheme = corev1.URISchemeHTTP
		}
	}
}

// IsAggressive reports whether p is a readiness probe in Knative's
// aggressive mode (periodSeconds 0 on a Knative Service). After defaulting
// (SetDefaults turns any other 0 into DefaultPeriodSeconds) only Knative
// Services keep such probes.
func IsAggressive(p *corev1.Probe) bool { return p != nil && p.PeriodSeconds == 0 }

// orDefault is v, or def when v was left at 0 (or is negative: callers that
// must reject negative values check them first).
func orDefault(v, def int32) int32 {
	if v <= 0 {
		return def
	}
	return v
}

// TimeoutOf is p's timeoutSeconds as a duration, defaulted.
func TimeoutOf(p *corev1.Probe) time.Duration {
	return time.Duration(orDefault(p.TimeoutSeconds, DefaultTimeoutSeconds)) * time.Second
}

// FailureThresholdOf is p's failureThreshold, defaulted.
func FailureThresholdOf(p *corev1.Probe) int {
	return int(orDefault(p.FailureThreshold, DefaultFailureThreshold))
}

// Timing is a probe's schedule and thresholds with the defaults applied,
// without validation. Aggressive is Knative's readiness mode for
// periodSeconds 0: probe as fast as possible until ready, then every
// AggressiveSteadyPeriod; otherwise a 0 period is the default 10 s.
func Timing(p *corev1.Probe, knativeAggressive bool) (c Config, aggressive bool) {
	c = Config{
		InitialDelay:     time.Duration(max(0, p.InitialDelaySeconds)) * time.Second,
		Period:           time.Duration(orDefault(p.PeriodSeconds, DefaultPeriodSeconds)) * time.Second,
		Timeout:          TimeoutOf(p),
		SuccessThreshold: int(orDefault(p.SuccessThreshold, DefaultSuccessThreshold)),
		FailureThreshold: FailureThresholdOf(p),
	}
	if knativeAggressive && p.PeriodSeconds <= 0 {
		c.Period, aggressive = AggressiveSteadyPeriod, true
	}
	return c, aggressive
}

// Counter applies successThreshold/failureThreshold: a verdict is reached
// once that many consecutive counted results agree. Errored attempts must
// not be counted (the kubelet drops them), so they never break a streak.
// The zero Counter has no streak.
type Counter struct {
	lastPassed bool
	streak     int
}

// Observe counts one result. It returns the verdict the streak has reached
// at this result (Success or Failure), or Unknown while the streak is below
// its threshold; every result past the threshold returns the verdict again,
// so callers publish only changes.
func (c *Counter) Observe(passed bool, successThreshold, failureThreshold int) State {
	if c.streak > 0 && c.lastPassed == passed {
		c.streak++
	} else {
		c.lastPassed, c.streak = passed, 1
	}
	threshold, verdict := failureThreshold, Failure
	if passed {
		threshold, verdict = successThreshold, Success
	}
	if c.streak < threshold {
		return Unknown
	}
	return verdict
}

// Reset forgets the streak (a new container, a verdict that ends probing).
func (c *Counter) Reset() { *c = Counter{} }

// Streak is the length of the current run of identical results and whether
// they passed.
func (c *Counter) Streak() (n int, passed bool) { return c.streak, c.lastPassed }

// NextTick returns the first grid point anchor + k·period strictly after
// now, or anchor itself while now is before it. Probing on this grid keeps
// a fixed rate: an attempt that overruns points drops them (one immediate
// catch-up run, as a Go ticker holds one tick) instead of shifting every
// later point.
func NextTick(anchor time.Time, period time.Duration, now time.Time) time.Time {
	if now.Before(anchor) {
		return anchor
	}
	k := now.Sub(anchor)/period + 1
	return anchor.Add(k * period)
}

// FirstTick is when a container that started at startedAt is first
// probed, given the earliest time the prober can (now, plus any start-up
// jitter): as soon as initialDelaySeconds have passed, not on the kubelet's
// next tick after that.
func FirstTick(startedAt time.Time, initialDelay time.Duration, earliest time.Time) time.Time {
	if due := startedAt.Add(initialDelay); due.After(earliest) {
		return due
	}
	return earliest
}

// randomJitter spreads first runs over [0, period) so that workers created
// together by a restarted node agent do not probe in lockstep.
func randomJitter(period time.Duration) time.Duration {
	if period <= 0 {
		return 0
	}
	return rand.N(period)
}

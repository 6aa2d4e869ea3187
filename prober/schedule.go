package prober

import (
	"math/rand/v2"
	"time"
)

// gridAfter returns the first point anchor + k·period strictly after t.
// Probing on this grid keeps a fixed rate: an attempt that overruns a point
// drops it instead of shifting every later point.
func gridAfter(anchor time.Time, period time.Duration, t time.Time) time.Time {
	if t.Before(anchor) {
		return anchor
	}
	k := t.Sub(anchor)/period + 1
	return anchor.Add(k * period)
}

// randomJitter spreads first runs over [0, period) so that workers created
// together by a restarted node agent do not probe in lockstep.
func randomJitter(period time.Duration) time.Duration {
	if period <= 0 {
		return 0
	}
	return rand.N(period)
}

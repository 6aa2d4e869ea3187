package runtime

import "time"

// The kubelet's CrashLoopBackOff (docs/facts.md §2).
const (
	backoffInitial = 10 * time.Second
	backoffMax     = 300 * time.Second
	// backoffReset: a container that ran longer than this starts over
	// with an immediate restart.
	backoffReset = 10 * time.Minute
)

// crashBackoff is one container's restart delay: the first restart is
// immediate, then 10 s, doubling up to 300 s, without jitter; it starts
// over once a container ran for more than 10 minutes. It holds no clock:
// times come in, a delay goes out.
type crashBackoff struct {
	// delay is the wait before the next restart; 0 until the first death.
	delay time.Duration
}

// next records a death of a container that ran from startedAt to
// finishedAt and returns how long to wait, from finishedAt, before
// starting it again.
//
// The kubelet measures the reset from the last restart rather than the run
// time in older versions; docs/facts.md §2 (current kubelets) is the run time.
func (b *crashBackoff) next(startedAt, finishedAt time.Time) time.Duration {
	if finishedAt.Sub(startedAt) > backoffReset {
		b.delay = 0
	}
	if b.delay == 0 {
		b.delay = backoffInitial
		return 0
	}
	d := b.delay
	b.delay = min(2*b.delay, backoffMax)
	return d
}

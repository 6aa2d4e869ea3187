package backoff

import "time"

// The kubelet's CrashLoopBackOff (docs/facts.md §2).
const (
	// Initial is the delay before the second restart.
	Initial = 10 * time.Second
	// Max caps the doubling.
	Max = 300 * time.Second
	// Reset: a container that ran longer than this starts over with an
	// immediate restart.
	Reset = 10 * time.Minute
)

// CrashLoop is one container's restart delay: the first restart is
// immediate, then 10 s, doubling up to 300 s, without jitter; it starts
// over once a container ran for more than 10 minutes. The zero value is
// ready to use.
type CrashLoop struct {
	// delay is the wait before the next restart; 0 until the first death.
	delay time.Duration
}

// Next records a death of a container that ran from startedAt to
// finishedAt and returns how long to wait, from finishedAt, before
// starting it again.
//
// The kubelet measures the reset from the last restart rather than the run
// time in older versions; docs/facts.md §2 (current kubelets) is the run time.
func (b *CrashLoop) Next(startedAt, finishedAt time.Time) time.Duration {
	if finishedAt.Sub(startedAt) > Reset {
		b.delay = 0
	}
	if b.delay == 0 {
		b.delay = Initial
		return 0
	}
	d := b.delay
	b.delay = min(2*b.delay, Max)
	return d
}

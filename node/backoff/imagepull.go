package backoff

import "time"

// The kubelet's image pull back-off (its image manager's, per pod and
// image): 10 s after the first failed pull, doubling to 300 s, without
// jitter; forgotten once no pull failed for twice the cap.
const (
	// PullInitial is the back-off after the first failed pull.
	PullInitial = 10 * time.Second
	// PullMax caps the doubling.
	PullMax = 300 * time.Second
	// PullForget: a back-off not renewed for this long is over, and the
	// next failure starts again at PullInitial.
	PullForget = 2 * PullMax
)

// ImagePull is the back-off of one pod's image pulls, per image. The zero
// value is ready to use; times come in from the caller's clock.
type ImagePull struct {
	entries map[string]pullEntry
}

type pullEntry struct {
	delay time.Duration // the back-off since last
	last  time.Time     // the last failed pull
}

// Failed records a failed pull of image at now: the back-off starts at
// PullInitial, or doubles (up to PullMax) if the last failure's is
// still remembered.
func (b *ImagePull) Failed(image string, now time.Time) {
	if b.entries == nil {
		b.entries = map[string]pullEntry{}
	}
	e, ok := b.entries[image]
	if !ok || now.Sub(e.last) > PullForget {
		e.delay = PullInitial
	} else {
		e.delay = min(2*e.delay, PullMax)
	}
	e.last = now
	b.entries[image] = e
}

// InBackOff reports whether a pull of image at now must wait: less than
// the back-off has passed since the last failure. until is when it may
// be tried again.
func (b *ImagePull) InBackOff(image string, now time.Time) (until time.Time, backingOff bool) {
	e, ok := b.entries[image]
	if !ok || now.Sub(e.last) > PullForget {
		return time.Time{}, false
	}
	until = e.last.Add(e.delay)
	return until, now.Before(until)
}

package backoff

import (
	"testing"
	"time"
)

func TestImagePullBackOffSequence(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const img = "example.test/app:v1"
	type step struct {
		after      time.Duration // since the previous step
		fail       bool          // a pull fails now (else: only asked)
		backingOff bool          // InBackOff's answer before any failure now
		until      time.Duration // since t0, when backingOff
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"no failure, no back-off", []step{{0, false, false, 0}}},
		{"10s after the first failure, then doubling", []step{
			{0, true, false, 0},
			{9 * time.Second, false, true, 10 * time.Second},
			{time.Second, true, false, 0}, // at 10 s: over, fails again → 20 s
			{19 * time.Second, false, true, 30 * time.Second},
			{time.Second, true, false, 0}, // at 30 s → 40 s
			{39 * time.Second, false, true, 70 * time.Second},
		}},
		{"capped at 300s", []step{
			{0, true, false, 0}, {10 * time.Second, true, false, 0}, {20 * time.Second, true, false, 0},
			{40 * time.Second, true, false, 0}, {80 * time.Second, true, false, 0}, {160 * time.Second, true, false, 0},
			// 310 s: the back-off is now 300 s, not 320 s.
			{299 * time.Second, false, true, 610 * time.Second},
			{time.Second, true, false, 0},
			{299 * time.Second, false, true, 910 * time.Second},
		}},
		{"forgotten after twice the cap without a failure", []step{
			{0, true, false, 0}, {10 * time.Second, true, false, 0},
			{20*time.Second + PullForget + time.Second, true, false, 0},
			// Starts over at 10 s, not 40 s.
			{9 * time.Second, false, true, 10*time.Second + 20*time.Second + PullForget + time.Second + 10*time.Second},
			{time.Second, false, false, 0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b ImagePull
			now := t0
			for i, s := range tc.steps {
				now = now.Add(s.after)
				until, backingOff := b.InBackOff(img, now)
				if backingOff != s.backingOff || (backingOff && !until.Equal(t0.Add(s.until))) {
					t.Fatalf("step %d at %s: backing off %v until %s, want %v until %s",
						i, now.Sub(t0), backingOff, until.Sub(t0), s.backingOff, s.until)
				}
				if s.fail {
					b.Failed(img, now)
				}
			}
			if _, other := b.InBackOff("example.test/other", now); other {
				t.Error("another image backs off too, want each image its own")
			}
		})
	}
}

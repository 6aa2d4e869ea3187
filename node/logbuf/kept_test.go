package logbuf

import "testing"

func TestKeptHoldsTheCurrentAndThePreviousInstance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		instances int
		// which instance (1-based, 0: none) Get returns
		wantCurrent, wantPrevious int
	}{
		{"before the first instance there is nothing", 0, 0, 0},
		{"the first instance has no previous one", 1, 1, 0},
		{"a restart keeps the one before", 2, 2, 1},
		{"only the last two are kept", 3, 3, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var k Kept
			var bufs []*Buffer
			for range tc.instances {
				bufs = append(bufs, k.Next(0))
			}
			which := func(b *Buffer) int {
				for i, x := range bufs {
					if x == b {
						return i + 1
					}
				}
				return 0
			}
			if got := which(k.Get(false)); got != tc.wantCurrent {
				t.Errorf("current is instance %d, want %d", got, tc.wantCurrent)
			}
			if got := which(k.Get(true)); got != tc.wantPrevious {
				t.Errorf("previous is instance %d, want %d", got, tc.wantPrevious)
			}
		})
	}
}

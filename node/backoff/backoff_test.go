package backoff

import (
	"testing"
	"time"
)

func TestCrashBackoffSequence(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type death struct {
		ran  time.Duration
		want time.Duration
	}
	for _, tc := range []struct {
		name   string
		deaths []death
	}{
		{"first restart is immediate, then 10s doubling", []death{{0, 0}, {0, 10 * time.Second}, {0, 20 * time.Second}, {0, 40 * time.Second}, {0, 80 * time.Second}, {0, 160 * time.Second}}},
		{"the delay is capped at 300s", []death{{0, 0}, {0, 10 * time.Second}, {0, 20 * time.Second}, {0, 40 * time.Second}, {0, 80 * time.Second}, {0, 160 * time.Second}, {0, 300 * time.Second}, {0, 300 * time.Second}}},
		{"a run of more than 10 minutes starts over", []death{{0, 0}, {0, 10 * time.Second}, {0, 20 * time.Second}, {11 * time.Minute, 0}, {0, 10 * time.Second}}},
		{"a run of exactly 10 minutes does not", []death{{0, 0}, {0, 10 * time.Second}, {10 * time.Minute, 20 * time.Second}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b CrashLoop
			now := t0
			for i, d := range tc.deaths {
				got := b.Next(now, now.Add(d.ran))
				if got != d.want {
					t.Fatalf("death %d (ran %s): delay %s, want %s", i+1, d.ran, got, d.want)
				}
				now = now.Add(d.ran + got)
			}
		})
	}
}

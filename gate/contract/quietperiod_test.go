package contract

import (
	"strings"
	"testing"
	"time"
)

func TestParseDrainQuietPeriod(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{"5s", 5 * time.Second, ""},
		{"1m30s", 90 * time.Second, ""},
		{"0s", 0, ""},
		{"0", 0, ""},
		{"250ms", 250 * time.Millisecond, ""},
		{"30", 0, "not a duration such as 5s"},
		{"", 0, "not a duration such as 5s"},
		{"five seconds", 0, "not a duration such as 5s"},
		{"-1s", 0, "must not be negative"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDrainQuietPeriod(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseDrainQuietPeriod(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseDrainQuietPeriod(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestQuietPeriodMustBeShorterThanTheGracePeriod(t *testing.T) {
	for _, tc := range []struct {
		quiet time.Duration
		grace int64
		want  bool
	}{
		{5 * time.Second, 30, true},
		{29 * time.Second, 30, true},
		{30 * time.Second, 30, false},
		{31 * time.Second, 30, false},
		{0, 0, true},
		{time.Second, 0, false},
	} {
		if got := QuietPeriodFits(tc.quiet, tc.grace); got != tc.want {
			t.Errorf("QuietPeriodFits(%v, %d) = %v, want %v", tc.quiet, tc.grace, got, tc.want)
		}
	}
}

func FuzzParseDrainQuietPeriod(f *testing.F) {
	for _, s := range []string{"5s", "0", "-1s", "30", "1h", "9223372036854775807ns", "1e3s", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDrainQuietPeriod(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("ParseDrainQuietPeriod(%q) = %v: negative accepted", s, d)
		}
		if back, err := ParseDrainQuietPeriod(d.String()); err != nil || back != d {
			t.Fatalf("%q → %v → %q → %v, %v: not stable", s, d, d.String(), back, err)
		}
	})
}

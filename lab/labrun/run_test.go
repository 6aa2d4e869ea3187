package labrun

import (
	"strings"
	"testing"
)

func TestPodCIDRsAreConsecutiveRangesOnLoopback(t *testing.T) {
	tests := []struct {
		first string
		n     int
		want  string
		err   string
	}{
		{"127.0.200.0/24", 3, "127.0.200.0/24 127.0.201.0/24 127.0.202.0/24", ""},
		{"127.0.200.7/24", 1, "127.0.200.0/24", ""},
		{"127.1.0.0/28", 2, "127.1.0.0/28 127.1.0.16/28", ""},
		{"127.255.254.0/24", 3, "", "beyond 127.0.0.0/8"},
		{"10.0.0.0/24", 1, "", "inside 127.0.0.0/8"},
		{"127.0.0.0/31", 1, "", "from /8 to /30"},
		{"nonsense", 1, "", "want an IPv4 CIDR"},
	}
	for _, tt := range tests {
		t.Run(tt.first, func(t *testing.T) {
			got, err := PodCIDRs(tt.first, tt.n)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || strings.Join(got, " ") != tt.want {
				t.Errorf("%v, %v; want %s", got, err, tt.want)
			}
		})
	}
}

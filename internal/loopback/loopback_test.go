package loopback

import (
	"strings"
	"testing"
)

func TestCheckTakesLoopbackAddressesOnly(t *testing.T) {
	for _, tc := range []struct {
		name, addr, want, wantErr string
	}{
		{"an IPv4 loopback address", "127.0.0.1:9700", "127.0.0.1:9700", ""},
		{"anywhere in 127.0.0.0/8", "127.3.2.1:0", "127.3.2.1:0", ""},
		{"IPv6 loopback", "[::1]:8080", "[::1]:8080", ""},
		{"localhost is 127.0.0.1", "localhost:8080", "127.0.0.1:8080", ""},
		{"no port", "127.0.0.1", "", "want HOST:PORT on loopback"},
		{"an empty host is every interface", ":9700", "", "an empty host listens on every interface"},
		{"every interface", "0.0.0.0:9700", "", "0.0.0.0 is not a loopback address"},
		{"a LAN address", "192.168.1.10:9700", "", "192.168.1.10 is not a loopback address"},
		{"a host name", "example.com:9700", "", "example.com is not a loopback address"},
		{"a port that is no number", "127.0.0.1:http", "", `port "http" must be a number from 0 (any free port) to 65535`},
		{"a port out of range", "127.0.0.1:70000", "", `port "70000" must be a number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Check(tc.addr)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Check(%q) = %q, %v; want an error containing %q", tc.addr, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Check(%q) = %q, %v; want %q", tc.addr, got, err, tc.want)
			}
		})
	}
}

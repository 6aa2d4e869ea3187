package proxy

import (
	"net/http"
	"strings"
	"testing"
)

func TestForwardedFrom(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.Header
		want string
	}{
		{"nothing forwarded, nothing made", http.Header{}, ""},
		{"IPv6 addresses are quoted and bracketed", http.Header{"X-Forwarded-For": {"2001:db8::1"}}, `for="[2001:db8::1]"`},
		{"host and proto alone", http.Header{"X-Forwarded-Host": {"h"}, "X-Forwarded-Proto": {"https"}}, "host=h;proto=https"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := forwardedFrom(tc.h); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func FuzzForwardedFrom(f *testing.F) {
	f.Add("203.0.113.7, 10.0.0.1", "h", "https")
	f.Add(",,", "", "")
	f.Add("::1,[x", ";", "=")
	f.Fuzz(func(t *testing.T, xff, host, proto string) {
		h := http.Header{}
		if xff != "" {
			h.Set("X-Forwarded-For", xff)
		}
		if host != "" {
			h.Set("X-Forwarded-Host", host)
		}
		if proto != "" {
			h.Set("X-Forwarded-Proto", proto)
		}
		got := forwardedFrom(h)
		if strings.TrimSpace(xff+host+proto) == "" && got != "" {
			t.Errorf("made %q from blank headers", got)
		}
	})
}

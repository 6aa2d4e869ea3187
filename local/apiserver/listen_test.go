package apiserver

import (
	"strings"
	"testing"
)

func TestListenIsLoopbackOnly(t *testing.T) {
	tests := []struct {
		name    string
		addr    string
		wantErr string
	}{
		{"127.0.0.1 is served", "127.0.0.1:0", ""},
		{"any 127/8 address is served", "127.0.0.3:0", ""},
		{"localhost means 127.0.0.1", "localhost:0", ""},
		{"every interface is refused", "0.0.0.0:9700", `"0.0.0.0:9700": 0.0.0.0 is not a loopback address; it has no authentication`},
		{"an empty host is refused", ":9700", `an empty host listens on every interface`},
		{"a LAN address is refused", "192.168.1.10:9700", `192.168.1.10 is not a loopback address`},
		{"a host name is refused", "example.com:9700", `example.com is not a loopback address`},
		{"a missing port is refused", "127.0.0.1", `want HOST:PORT on loopback (the control API has no authentication; e.g. 127.0.0.1:9700)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := Listen(tt.addr)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				if host := ln.Addr().String(); !strings.HasPrefix(host, "127.") {
					t.Errorf("listening on %s", host)
				}
				return
			}
			if err == nil {
				ln.Close()
				t.Fatalf("Listen(%q) succeeded", tt.addr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

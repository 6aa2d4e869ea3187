package podctl

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
)

func TestNewClientTakesHostPortOrAnHTTPURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		addr    string
		wantErr bool
	}{
		{"host and port", "127.0.0.1:9700", false},
		{"an http URL", "http://127.0.0.1:9700", false},
		{"an http URL with a slash", "http://127.0.0.1:9700/", false},
		{"https is not served", "https://127.0.0.1:9700", true},
		{"a path is not a control API address", "http://127.0.0.1:9700/api", true},
		{"nothing", "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewClient(tt.addr)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil {
				c.Close()
			} else if !strings.Contains(err.Error(), "want HOST:PORT or http://HOST:PORT") {
				t.Errorf("err = %q", err)
			}
		})
	}
}

func TestAClosedPortIsUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := NewClient(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out, errOut bytes.Buffer
	err = Get(context.Background(), c, GetRequest{Args: []string{"pods"}, Namespace: "default"}, &out, &errOut)
	var unreachable *UnreachableError
	if !errors.As(err, &unreachable) {
		t.Fatalf("err = %v (%T), want *UnreachableError", err, err)
	}
	if want := "cannot reach podgate at " + addr + ": is 'podgate run' running?"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("the cause is lost: %v", unreachable.Err)
	}
}

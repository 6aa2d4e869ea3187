package apiclient

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestNewClientTakesHostPortOrAnHTTPURL(t *testing.T) {
	tests := []struct {
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.addr)
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, _ := New(addr)
	defer c.Close()
	_, err = c.ListPods(context.Background(), ListOptions{})
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

func TestANonStatusErrorBodyStillBecomesAStatusError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream exploded", http.StatusBadGateway)
	}))
	defer srv.Close()
	c, _ := New(srv.URL)
	defer c.Close()
	_, err := c.GetPod(context.Background(), "default", "web")
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Code != http.StatusBadGateway || !strings.Contains(err.Error(), "upstream exploded") {
		t.Errorf("err = %v", err)
	}
}

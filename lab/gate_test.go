package lab_test

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/podgate/podgate/lab"
)

// gateIP is where the gate tests serve: a pod address of the lab's
// spare range (127.0.79.0/24), on the gate's fixed ports, as a gate
// listens on its pod's address.
const gateIP = "127.0.79.250"

func serveOn(t *testing.T, addr string, h http.HandlerFunc) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

func TestGateRequests(t *testing.T) {
	var body atomic.Value
	serveOn(t, gateIP+":9091", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, body.Load())
	})
	for _, tc := range []struct {
		name    string
		metrics string
		want    float64
		wantErr string
	}{
		{"no series yet is zero", "# HELP podgate_requests_total proxied requests\n# TYPE podgate_requests_total counter\npodgate_ready 1\n", 0, ""},
		{"series of every code add up", "podgate_requests_total{code=\"200\"} 41\npodgate_requests_total{code=\"504\"} 1\n", 42, ""},
		{"a metric whose name extends it is another metric", "podgate_requests_total_created 1.7e9\npodgate_requests_total{code=\"200\"} 3\n", 3, ""},
		{"a timestamp after the value is ignored", "podgate_requests_total{code=\"200\"} 5 1700000000000\n", 5, ""},
		{"a malformed value is an error", "podgate_requests_total{code=\"200\"} many\n", 0, `expected float as value, got "many"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body.Store(tc.metrics)
			got, err := lab.GateRequests(t.Context(), gateIP)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("GateRequests = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	if _, err := lab.GateRequests(t.Context(), "192.168.1.1"); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("an address off loopback: err = %v", err)
	}
}

func TestReadGateReadiness(t *testing.T) {
	serveOn(t, gateIP+":8022", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.URL.Query()["verbose"]; r.URL.Path != "/readyz" || !ok {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, "[+]gate ok\n[+]first-container ok [serving; httpGet, every 1s]\n[-]second-container failed: readiness probe: failure: HTTP probe failed with statuscode: 503 [httpGet]\nreadyz check failed\n")
	})
	g, err := lab.ReadGateReadiness(t.Context(), gateIP)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"gate": true, "first-container": true, "second-container": false}
	if g.Ready || fmt.Sprint(g.Containers) != fmt.Sprint(want) || !strings.Contains(g.Text, "statuscode: 503") {
		t.Errorf("readiness = %+v, want not ready with %v", g, want)
	}
}

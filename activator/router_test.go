package activator

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRouter(t *testing.T) {
	rt := NewRouter("")
	named := func(s string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, s) })
	}
	rt.Set("default", "hello", named("hello"))
	rt.Set("team", "hello", named("team-hello"))
	rt.Set("default", "gone", named("gone"))
	rt.Delete("default", "gone")
	front := httptest.NewServer(rt)
	defer front.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	tests := []struct {
		name, host string
		header     http.Header
		wantCode   int
		wantBody   string
	}{
		{"NAME.NAMESPACE.DOMAIN routes to the service", "hello.default.example.com", nil, 200, "hello"},
		{"namespace tells services apart", "hello.team.example.com", nil, 200, "team-hello"},
		{"port, case and trailing dot are ignored", "Hello.Default.Example.COM.:8080", nil, 200, "hello"},
		{"unknown host is 404 naming the host", "nope.default.example.com", nil, 404, `no service for host "nope.default.example.com"`},
		{"deleted route is 404", "gone.default.example.com", nil, 404, "no service"},
		{"other domain is 404", "hello.default.example.org", nil, 404, "no service"},
		{"a route check of a routed host is answered by the router, not the service", "hello.default.example.com",
			http.Header{"K-Network-Probe": {"probe"}, "K-Network-Hash": {"h"}}, 200, ""},
		{"a route check without a hash is refused", "hello.default.example.com",
			http.Header{"K-Network-Probe": {"probe"}}, 400, "K-Network-Hash"},
		{"a route check of an unknown host is 404", "nope.default.example.com",
			http.Header{"K-Network-Probe": {"probe"}, "K-Network-Hash": {"h"}}, 404, "no service"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, front.URL, nil)
			req.Host = tc.host
			for k, v := range tc.header {
				req.Header[k] = v
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode || !strings.Contains(string(b), tc.wantBody) {
				t.Fatalf("got %d %q, want %d containing %q", resp.StatusCode, b, tc.wantCode, tc.wantBody)
			}
			if hash := tc.header.Get("K-Network-Hash"); tc.wantCode == 200 && hash != "" && resp.Header.Get("K-Network-Hash") != hash {
				t.Errorf("K-Network-Hash %q, want %q echoed", resp.Header.Get("K-Network-Hash"), hash)
			}
			if tc.header != nil && len(b) != 0 && tc.wantCode == 200 {
				t.Errorf("route check answered %q: it reached the service", b)
			}
		})
	}
	if got := NewRouter("apps.local.").URL("ns", "svc"); got != "http://svc.ns.apps.local" {
		t.Errorf("URL = %q", got)
	}
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"negative concurrency", Config{ContainerConcurrency: -1}, "containerConcurrency: Invalid value: -1"},
		{"negative queue depth", Config{QueueDepth: -5}, "queueDepth: Invalid value: -5"},
		{"negative timeout", Config{RequestTimeout: -1}, "must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewTarget("x", tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

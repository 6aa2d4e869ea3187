package probe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestBindSendsWhatRunSends: a bound probe puts the same request on the
// wire as Run, on every tick (the prepared request is reused).
func TestBindSendsWhatRunSends(t *testing.T) {
	for _, tc := range []struct {
		name    string
		path    string
		headers []corev1.HTTPHeader
	}{
		{"defaults", "/readyz", nil},
		{"a query and no leading slash", "healthz?full=1", nil},
		{"a path that does not parse is sent escaped", "/%zz?a=b", nil},
		{"user headers, repeats, Host, UA, Accept and Connection", "/", []corev1.HTTPHeader{
			{Name: "X-Check", Value: "a"}, {Name: "x-check", Value: "b"}, {Name: "Host", Value: "app.example.test"},
			{Name: "User-Agent", Value: "mine/1"}, {Name: "Accept", Value: "text/plain"}, {Name: "Accept", Value: ""},
			{Name: "Connection", Value: "keep-alive"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newRawServer(t)
			p := httpGetProbe(intstr.FromInt32(int32(s.port())), tc.path)
			p.HTTPGet.HTTPHeaders = tc.headers
			tg := Target{PodIP: "127.0.0.1"}
			if o := run(t, p, tg); o.Result != Success {
				t.Fatalf("Run: %v (%s), want success", o.Result, o.Message)
			}
			want := <-s.heads
			tick := runner.Bind(p, tg)
			for i := range 2 {
				if o := tick(context.Background()); o.Result != Success {
					t.Fatalf("bound tick %d: %v (%s), want success", i, o.Result, o.Message)
				}
				if got := <-s.heads; !slices.Equal(got, want) {
					t.Errorf("bound tick %d sent:\n%s\nRun sent:\n%s", i, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			}
		})
	}
}

// TestBindOutcomeIsRunOutcome: a bound probe's outcome is Run's, errors
// and their retries included.
func TestBindOutcomeIsRunOutcome(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/unavailable", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	mux.HandleFunc("/hop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:1/", http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	host, port := hostPort(t, srv.URL)
	tg := Target{PodIP: host, Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: int32(port)}}}
	for _, tc := range []struct {
		name string
		port intstr.IntOrString
		path string
	}{
		{"success", intstr.FromInt32(int32(port)), "/ok"},
		{"success on a named port", intstr.FromString("web"), "/ok"},
		{"failure", intstr.FromInt32(int32(port)), "/unavailable"},
		{"a followed redirect", intstr.FromInt32(int32(port)), "/hop"},
		{"a redirect to another host is a warning", intstr.FromInt32(int32(port)), "/away"},
		{"too many redirects", intstr.FromInt32(int32(port)), "/loop"},
		{"an unknown named port errors, three attempts", intstr.FromString("nope"), "/ok"},
		{"a refused connection", intstr.FromInt32(int32(freePort(t))), "/ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := httpGetProbe(tc.port, tc.path)
			want := run(t, p, tg)
			tick := runner.Bind(p, tg)
			for i := range 2 {
				got := tick(context.Background())
				if got.Result != want.Result || got.Message != want.Message || got.StatusCode != want.StatusCode ||
					got.Attempts != want.Attempts || (got.Err == nil) != (want.Err == nil) ||
					got.Err != nil && got.Err.Error() != want.Err.Error() {
					t.Errorf("bound tick %d: %+v\nRun: %+v", i, got, want)
				}
			}
		})
	}
}

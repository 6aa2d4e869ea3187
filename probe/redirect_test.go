package probe

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// redirector serves /r/N as a redirect to /r/N-1 and /r/0 as 200, and
// /to?u=URL as a redirect to URL, each with body "moved". It remembers the
// Referer of the last request that reached /r/0.
type redirector struct {
	mu      sync.Mutex
	referer string
	final   int
}

func (rd *redirector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/to":
		w.Header().Set("Location", r.URL.Query().Get("u"))
		w.WriteHeader(http.StatusFound)
		_, _ = w.Write([]byte("moved"))
	case strings.HasPrefix(r.URL.Path, "/r/"):
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/r/"))
		if n > 0 {
			w.Header().Set("Location", fmt.Sprintf("/r/%d", n-1))
			w.WriteHeader(http.StatusFound)
			_, _ = w.Write([]byte("moved"))
			return
		}
		rd.mu.Lock()
		rd.referer, rd.final = r.Referer(), rd.final+1
		rd.mu.Unlock()
		_, _ = w.Write([]byte("ok"))
	default:
		http.NotFound(w, r)
	}
}

func (rd *redirector) reached() (int, string) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	return rd.final, rd.referer
}

func TestHTTPRedirects(t *testing.T) {
	rd := &redirector{}
	s := httptest.NewServer(rd)
	defer s.Close()
	_, port := hostPort(t, s.URL)
	other := httptest.NewServer(rd) // same hostname, another port
	defer other.Close()
	_, otherPort := hostPort(t, other.URL)
	secure := httptest.NewTLSServer(rd) // same hostname, another scheme
	defer secure.Close()
	_, securePort := hostPort(t, secure.URL)

	tests := []struct {
		name      string
		path      string
		headers   []corev1.HTTPHeader
		want      Result
		wantMsg   string
		wantFinal bool // the chain reached /r/0
	}{
		{"nine redirects are followed", "/r/9", nil, Success, "", true},
		// net/http names the refused Location, as written, in the error.
		{"the tenth redirect fails", "/r/10", nil, Failure, `Get "/r/0": stopped after 10 redirects`, false},
		{"a redirect to another hostname is a warning (localhost is not 127.0.0.1)",
			"/to?u=" + fmt.Sprintf("http://localhost:%d/r/0", port), nil,
			Warning, "Probe terminated redirects, Response body: moved", false},
		{"the Host header plays no part in the same-host check",
			"/to?u=" + fmt.Sprintf("http://localhost:%d/r/0", port),
			[]corev1.HTTPHeader{{Name: "Host", Value: "localhost"}},
			Warning, "Probe terminated redirects, Response body: moved", false},
		{"a redirect to another port of the same hostname is followed",
			"/to?u=" + fmt.Sprintf("http://127.0.0.1:%d/r/0", otherPort), nil, Success, "", true},
		{"a redirect to another scheme on the same hostname is followed",
			"/to?u=" + fmt.Sprintf("https://127.0.0.1:%d/r/0", securePort), nil, Success, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := rd.reached()
			p := httpGetProbe(intstr.FromInt32(int32(port)), tc.path)
			p.HTTPGet.HTTPHeaders = tc.headers
			o := run(t, p, Target{PodIP: "127.0.0.1"})
			if o.Result != tc.want || o.Message != tc.wantMsg || o.Attempts != 1 {
				t.Errorf("got %v %q after %d attempts, want %v %q after 1", o.Result, o.Message, o.Attempts, tc.want, tc.wantMsg)
			}
			if after, _ := rd.reached(); (after > before) != tc.wantFinal {
				t.Errorf("chain reached the end: %v, want %v", after > before, tc.wantFinal)
			}
		})
	}

	t.Run("followed requests carry Referer", func(t *testing.T) {
		o := run(t, httpGetProbe(intstr.FromInt32(int32(port)), "/r/2"), Target{PodIP: "127.0.0.1"})
		if o.Result != Success {
			t.Fatalf("result = %v (%s), want success", o.Result, o.Message)
		}
		if _, ref := rd.reached(); ref != fmt.Sprintf("http://127.0.0.1:%d/r/1", port) {
			t.Errorf("Referer = %q", ref)
		}
	})
}

package testapp_test

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/podgate/podgate/test/testapp"
)

func TestResolveAndFetchAnswerFromInsideThePod(t *testing.T) {
	s, _ := startApp(t, testapp.Config{Name: "caller"})
	other, _ := startApp(t, testapp.Config{Name: "callee"})
	for _, tc := range []struct {
		name, path string
		wantCode   int
		wantBody   string
	}{
		{"resolve answers the addresses of a name", "/resolve?name=localhost", http.StatusOK, "127.0.0.1\n"},
		{"resolve without a name is a bad request", "/resolve", http.StatusBadRequest, "?name= is required"},
		{"fetch answers the status and body of a GET from the app", "/fetch?url=" + url.QueryEscape(other.URL()+"/x"), http.StatusOK, "200\ncallee\n"},
		{"fetch passes a Host header", "/fetch?host=h.example&url=" + url.QueryEscape(other.URL()+"/"), http.StatusOK, "200\ncallee\n"},
		{"fetch refuses what is not an http URL", "/fetch?url=file:///etc/passwd", http.StatusBadRequest, "must be an http or https URL"},
		{"fetch of a closed port is a bad gateway", "/fetch?url=" + url.QueryEscape("http://127.0.0.1:1/"), http.StatusBadGateway, "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := get(t, s.URL()+tc.path)
			if got.code != tc.wantCode || !strings.Contains(got.body, tc.wantBody) {
				t.Errorf("GET %s = %d %q, want %d with %q", tc.path, got.code, got.body, tc.wantCode, tc.wantBody)
			}
		})
	}
}

// TestFetchSendsWhatAPodsContainerWould: /fetch with a method, a body and
// the pod's service-account token (read from the mounted directory, its
// CA trusted for https), as a container of an injected pod would try the
// API server or the node status service with its own credentials.
func TestFetchSendsWhatAPodsContainerWould(t *testing.T) {
	var seen struct {
		sync.Mutex
		method, body, contentType, auth string
	}
	callee := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen.Lock()
		seen.method, seen.body, seen.contentType, seen.auth = r.Method, string(b), r.Header.Get("Content-Type"), r.Header.Get("Authorization")
		seen.Unlock()
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, "refused")
	}))
	defer callee.Close()
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: callee.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("the-pods-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ := startApp(t, testapp.Config{Name: "caller", ServiceAccountDir: dir})
	path := "/fetch?method=PATCH&token=serviceaccount&content-type=" + url.QueryEscape("application/merge-patch+json") + "&url=" + url.QueryEscape(callee.URL+"/api/v1/namespaces/shop/pods/a/status")
	resp, err := http.Post(s.URL()+path, "application/json", strings.NewReader(`{"status":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "403\nrefused" {
		t.Errorf("/fetch answered %d %q, want 200 with the callee's 403 and body", resp.StatusCode, b)
	}
	seen.Lock()
	defer seen.Unlock()
	if seen.method != http.MethodPatch || seen.body != `{"status":{}}` || seen.contentType != "application/merge-patch+json" || seen.auth != "Bearer the-pods-token" {
		t.Errorf("the callee saw %s %q (%s, %q), want PATCH of the body, with its content type and the pod's token", seen.method, seen.body, seen.contentType, seen.auth)
	}
	for _, tc := range []struct{ name, path, want string }{
		{"an unknown token source is a bad request", "/fetch?token=other&url=" + url.QueryEscape(callee.URL), "only serviceaccount is known"},
		{"https without the pod's CA is not trusted", "/fetch?url=" + url.QueryEscape(callee.URL), "certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := get(t, s.URL()+tc.path); got.code == http.StatusOK || !strings.Contains(got.body, tc.want) {
				t.Errorf("GET %s = %d %q, want a failure with %q", tc.path, got.code, got.body, tc.want)
			}
		})
	}
}

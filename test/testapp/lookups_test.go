package testapp_test

import (
	"net/http"
	"net/url"
	"strings"
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
		{"fetch refuses what is not an http URL", "/fetch?url=file:///etc/passwd", http.StatusBadRequest, "must be an http URL"},
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

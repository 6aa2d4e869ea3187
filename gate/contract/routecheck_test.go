package contract

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRouteCheck(t *testing.T) {
	for _, tc := range []struct {
		name        string
		header      http.Header
		isCheck     bool
		code        int
		echo, inErr string
	}{
		{"a route check with a hash is answered 200 with the hash echoed", http.Header{"K-Network-Probe": {"probe"}, "K-Network-Hash": {"abc"}}, true, 200, "abc", ""},
		{"a route check without a hash is refused naming the header", http.Header{"K-Network-Probe": {"probe"}}, true, 400, "", `"K-Network-Hash"`},
		{"a health check of the gate is no route check", http.Header{"K-Network-Probe": {"queue"}}, false, 0, "", ""},
		{"a plain request is no route check", http.Header{}, false, 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Header = tc.header
			if got := IsRouteCheck(r); got != tc.isCheck {
				t.Fatalf("IsRouteCheck = %v, want %v", got, tc.isCheck)
			}
			if !tc.isCheck {
				return
			}
			w := httptest.NewRecorder()
			AnswerRouteCheck(w, r)
			if w.Code != tc.code || w.Header().Get("K-Network-Hash") != tc.echo || !strings.Contains(w.Body.String(), tc.inErr) {
				t.Errorf("%d hash %q body %q, want %d hash %q body with %q", w.Code, w.Header().Get("K-Network-Hash"), w.Body.String(), tc.code, tc.echo, tc.inErr)
			}
		})
	}
}

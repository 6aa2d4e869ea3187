package lab_test

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/podgate/podgate/lab"
	"github.com/podgate/podgate/test/testapp"
)

func TestToggleDrivesTheTestApp(t *testing.T) {
	execFile := filepath.Join(t.TempDir(), "exec")
	app, err := testapp.Start(testapp.Config{ExecFile: execFile}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Shutdown(t.Context()) })
	host, portText, _ := net.SplitHostPort(app.Addr())
	port, _ := strconv.Atoi(portText)
	get := func(path string) int {
		t.Helper()
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Get(app.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	exists := func() bool { _, err := os.Stat(execFile); return err == nil }

	for _, tc := range []struct {
		name   string
		toggle string
		on     bool
		check  func() bool
	}{
		{"readiness off fails /readyz", lab.ToggleReady, false, func() bool { return get("/readyz") == 503 }},
		{"readiness off again stays off (set, not flip)", lab.ToggleReady, false, func() bool { return get("/readyz") == 503 }},
		{"readiness on passes /readyz", lab.ToggleReady, true, func() bool { return get("/readyz") == 200 }},
		{"liveness off fails /livez", lab.ToggleLive, false, func() bool { return get("/livez") == 500 }},
		{"liveness on passes /livez", lab.ToggleLive, true, func() bool { return get("/livez") == 200 }},
		{"exec off removes the file", lab.ToggleExec, false, func() bool { return !exists() }},
		{"exec on creates it", lab.ToggleExec, true, exists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := lab.Toggle(t.Context(), host, port, tc.toggle, tc.on); err != nil {
				t.Fatal(err)
			}
			if !tc.check() {
				t.Errorf("%s set=%t had no effect", tc.toggle, tc.on)
			}
		})
	}

	t.Run("a toggle the app refuses is an error with its answer", func(t *testing.T) {
		plain, err := testapp.Start(testapp.Config{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer plain.Shutdown(t.Context())
		h, p, _ := net.SplitHostPort(plain.Addr())
		pn, _ := strconv.Atoi(p)
		err = lab.Toggle(t.Context(), h, pn, lab.ToggleExec, false)
		if err == nil || !strings.Contains(err.Error(), "404") {
			t.Errorf("err = %v, want the app's 404 (no exec file)", err)
		}
	})
	t.Run("an address off loopback is refused", func(t *testing.T) {
		if err := lab.Toggle(t.Context(), "10.0.0.1", 8080, lab.ToggleReady, false); err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("err = %v", err)
		}
	})
}

package testapp_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/test/syncbuf"
	"github.com/podgate/podgate/test/testapp"
)

// waitTimeout is how long a poll waits for something that should happen
// promptly; generous because the test machine may be loaded.
const waitTimeout = 30 * time.Second

func newFakeClock() *testingclock.FakeClock {
	return testingclock.NewFakeClock(time.Date(2024, 1, 16, 14, 53, 0, 0, time.UTC))
}

// startApp starts an app on 127.0.0.1:0 and shuts it down when the test ends.
func startApp(t *testing.T, cfg testapp.Config) (*testapp.Server, *syncbuf.Buffer) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	s, err := testapp.Start(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatalf("Start(%+v): %v", cfg, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s, logs
}

// newClient is a probe-like client: no keep-alives (as the kubelet) so no
// idle connection outlives a test, and redirects are not followed.
func newClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
		Timeout: waitTimeout,
	}
}

type response struct {
	code     int
	body     string
	location string
}

func do(t *testing.T, method, url string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatalf("NewRequest(%s %s): %v", method, url, err)
	}
	resp, err := newClient().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return response{code: resp.StatusCode, body: string(body), location: resp.Header.Get("Location")}
}

func get(t *testing.T, url string) response { t.Helper(); return do(t, http.MethodGet, url) }

// expect checks one request's status and, if given, a body substring.
func expect(t *testing.T, s *testapp.Server, method, path string, wantCode int, wantBody string) {
	t.Helper()
	got := do(t, method, s.URL()+path)
	if got.code != wantCode {
		t.Errorf("%s %s = %d %q, want %d", method, path, got.code, got.body, wantCode)
	}
	if wantBody != "" && !strings.Contains(got.body, wantBody) {
		t.Errorf("%s %s body = %q, want it to contain %q", method, path, got.body, wantBody)
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", waitTimeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

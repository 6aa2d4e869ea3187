package testapp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/test/testapp"
)

// req is one request of a scenario and what it must answer.
type req struct {
	method   string
	path     string
	wantCode int
	wantBody string // substring; "" checks only the code
}

func TestRootAnswersName(t *testing.T) {
	s, _ := startApp(t, testapp.Config{Name: "first-container"})
	for _, tc := range []struct {
		name, path string
	}{
		{"root answers the name and a newline", "/"},
		{"any other path answers the name too", "/some/traffic?x=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := get(t, s.URL()+tc.path)
			if got.code != http.StatusOK || got.body != "first-container\n" {
				t.Errorf("GET %s = %d %q, want 200 %q", tc.path, got.code, got.body, "first-container\n")
			}
		})
	}
}

func TestDefaultNameIsTestapp(t *testing.T) {
	s, _ := startApp(t, testapp.Config{})
	if got := get(t, s.URL()+"/"); got.body != "testapp\n" {
		t.Errorf("GET / body = %q, want %q", got.body, "testapp\n")
	}
}

func TestToggles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []req
	}{
		{"a started app is live and ready", []req{
			{"GET", "/readyz", 200, "ready"},
			{"GET", "/healthz", 200, "ok"},
			{"GET", "/livez", 200, "ok"},
		}},
		{"toggleReady by GET makes readyz 503 and leaves liveness alone", []req{
			{"GET", "/toggleReady", 200, "Readiness: false"},
			{"GET", "/readyz", 503, "ready toggle is off"},
			{"GET", "/healthz", 200, ""},
			{"GET", "/livez", 200, ""},
		}},
		{"toggleReady by POST flips back", []req{
			{"POST", "/toggleReady", 200, "Readiness: false"},
			{"POST", "/toggleReady", 200, "Readiness: true"},
			{"GET", "/readyz", 200, ""},
		}},
		{"toggleLive fails healthz and livez but not readiness", []req{
			{"GET", "/toggleLive", 200, "Liveness: false"},
			{"GET", "/healthz", 500, "live toggle is off"},
			{"GET", "/livez", 500, "live toggle is off"},
			{"GET", "/readyz", 200, ""},
			{"POST", "/toggleLive", 200, "Liveness: true"},
			{"GET", "/healthz", 200, ""},
		}},
		{"set=false is idempotent", []req{
			{"GET", "/toggleReady?set=false", 200, "Readiness: false"},
			{"GET", "/toggleReady?set=false", 200, "Readiness: false"},
			{"GET", "/readyz", 503, ""},
			{"POST", "/toggleReady?set=true", 200, "Readiness: true"},
			{"GET", "/readyz", 200, ""},
		}},
		{"an invalid set value is a 400 and changes nothing", []req{
			{"GET", "/toggleLive?set=maybe", 400, `invalid ?set="maybe"`},
			{"GET", "/livez", 200, ""},
		}},
		{"toggles refuse methods other than GET and POST", []req{
			{"PUT", "/toggleReady", 405, ""},
			{"DELETE", "/toggleLive", 405, ""},
			{"GET", "/readyz", 200, ""},
			{"GET", "/livez", 200, ""},
		}},
		{"toggleExec without an exec file is a 404", []req{
			{"GET", "/toggleExec", 404, "--exec-file"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := startApp(t, testapp.Config{})
			for _, st := range tc.steps {
				expect(t, s, st.method, st.path, st.wantCode, st.wantBody)
			}
		})
	}
}

func TestTogglesInProcessMatchHTTP(t *testing.T) {
	s, _ := startApp(t, testapp.Config{})
	s.SetReady(false)
	s.SetLive(false)
	expect(t, s, "GET", "/readyz", 503, "")
	expect(t, s, "GET", "/healthz", 500, "")
	expect(t, s, "GET", "/livez", 500, "")
	if s.Ready() || s.Live() || s.Healthy() {
		t.Errorf("after SetReady(false), SetLive(false): Ready=%t Live=%t Healthy=%t, want all false",
			s.Ready(), s.Live(), s.Healthy())
	}
	expect(t, s, "GET", "/toggleReady", 200, "Readiness: true")
	if !s.Ready() {
		t.Error("Ready() = false after /toggleReady flipped it on")
	}
}

func TestReadyAfter(t *testing.T) {
	const readyAfter = 3 * time.Second
	for _, tc := range []struct {
		name      string
		toggleOff bool // toggle readiness off while ready-after runs
		want      int
	}{
		{"readyz is 503 until ready-after elapsed, then 200", false, 200},
		{"a ready toggle turned off meanwhile keeps readyz 503 after ready-after", true, 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeClock()
			s, logs := startApp(t, testapp.Config{ReadyAfter: readyAfter, Clock: fc})
			expect(t, s, "GET", "/readyz", 503, "ready-after 3s has not elapsed")
			if tc.toggleOff {
				expect(t, s, "GET", "/toggleReady", 200, "Readiness: false")
			}
			fc.Step(readyAfter - time.Millisecond)
			expect(t, s, "GET", "/readyz", 503, "")
			// Liveness does not wait for readiness.
			expect(t, s, "GET", "/healthz", 200, "")
			fc.Step(time.Millisecond)
			expect(t, s, "GET", "/readyz", tc.want, "")
			if !strings.Contains(logs.String(), "ready-after elapsed") {
				t.Errorf("logs lack the ready-after line:\n%s", logs)
			}
		})
	}
}

func TestFailLiveAfter(t *testing.T) {
	const failAfter = 10 * time.Second
	fc := newFakeClock()
	s, _ := startApp(t, testapp.Config{FailLiveAfter: failAfter, Clock: fc})
	steps := []struct {
		name  string
		step  time.Duration
		check []req
	}{
		{"healthz is 200 before fail-live-after", failAfter - time.Millisecond, []req{
			{"GET", "/healthz", 200, "ok"},
		}},
		{"healthz is 500 once fail-live-after elapsed, livez and readyz unaffected", time.Millisecond, []req{
			{"GET", "/healthz", 500, "fail-live-after 10s elapsed"},
			{"GET", "/livez", 200, ""},
			{"GET", "/readyz", 200, ""},
		}},
		{"healthz stays 500 for good, like agnhost liveness", time.Hour, []req{
			{"GET", "/toggleLive?set=true", 200, ""},
			{"GET", "/healthz", 500, ""},
		}},
	}
	for _, st := range steps {
		fc.Step(st.step)
		t.Run(st.name, func(t *testing.T) {
			for _, r := range st.check {
				expect(t, s, r.method, r.path, r.wantCode, r.wantBody)
			}
		})
	}
}

func TestProbeLogLines(t *testing.T) {
	s, logs := startApp(t, testapp.Config{Name: "first-container"})
	get(t, s.URL()+"/readyz")
	get(t, s.URL()+"/toggleReady")
	get(t, s.URL()+"/readyz")
	get(t, s.URL()+"/healthz")
	get(t, s.URL()+"/toggleLive")
	get(t, s.URL()+"/livez")
	for _, tc := range []struct {
		name, line string
		want       int // times the line appears; -1: at least once
	}{
		{"readiness true line as in the experiments", "Readiness probe called, responding with: true", 1},
		{"readiness false line as in the experiments", "Readiness probe called, responding with: false", 1},
		{"liveness true line", "Liveness probe called, responding with: true", 1},
		{"liveness false line", "Liveness probe called, responding with: false", 1},
		{"ready toggle says what it did", "Readiness toggled, now responding with: false", 1},
		{"live toggle says what it did", "Liveness toggled, now responding with: false", 1},
		{"lines carry the app name", "name=first-container", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := strings.Count(logs.String(), tc.line)
			if (tc.want < 0 && n == 0) || (tc.want >= 0 && n != tc.want) {
				t.Errorf("logs contain %q %d times, want %d (-1: some):\n%s", tc.line, n, tc.want, logs)
			}
		})
	}
}

func TestRedirect(t *testing.T) {
	s, _ := startApp(t, testapp.Config{})
	for _, tc := range []struct {
		name     string
		query    string
		wantCode int
		wantLoc  string
	}{
		{"local redirect is a 302 to the path", "loc=/readyz", 302, "/readyz"},
		{"other-host redirect keeps the URL", "loc=http://127.0.0.2:8080/healthz", 302, "http://127.0.0.2:8080/healthz"},
		{"code picks the status", "loc=/healthz&code=307", 307, "/healthz"},
		{"301 is allowed", "loc=/&code=301", 301, "/"},
		{"missing loc is a 400", "", 400, ""},
		{"a non-3xx code is a 400", "loc=/&code=200", 400, ""},
		{"a non-numeric code is a 400", "loc=/&code=abc", 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := get(t, s.URL()+"/redirect?"+tc.query)
			if got.code != tc.wantCode || got.location != tc.wantLoc {
				t.Errorf("GET /redirect?%s = %d Location %q, want %d Location %q",
					tc.query, got.code, got.location, tc.wantCode, tc.wantLoc)
			}
		})
	}
}

func TestRedirectFollowedLandsOnTarget(t *testing.T) {
	s, _ := startApp(t, testapp.Config{})
	c := newClient()
	c.CheckRedirect = nil // follow, as the kubelet does for same-host redirects
	resp, err := c.Get(s.URL() + "/redirect?loc=/toggleReady%3Fset%3Dfalse")
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/toggleReady" {
		t.Errorf("followed redirect ended at %s with %d, want /toggleReady with 200", resp.Request.URL, resp.StatusCode)
	}
	if s.Ready() {
		t.Error("the redirect target /toggleReady?set=false did not run")
	}
}

// FuzzRedirect: any loc and code either redirect with a 3xx or are refused
// with a 400, never a panic or another status.
func FuzzRedirect(f *testing.F) {
	f.Add("/readyz", "")
	f.Add("http://127.0.0.2:8080/x", "307")
	f.Add("", "302")
	f.Add("//evil", "399")
	f.Add("/%zz?a=b", "-1")
	s, err := testapp.Start(testapp.Config{}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	h := s.Handler()
	f.Fuzz(func(t *testing.T, loc, code string) {
		q := url.Values{}
		if loc != "" {
			q.Set("loc", loc)
		}
		if code != "" {
			q.Set("code", code)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/redirect?"+q.Encode(), nil))
		switch {
		case rec.Code == http.StatusBadRequest:
		case rec.Code >= 300 && rec.Code <= 399:
			if rec.Header().Get("Location") == "" && loc != "" {
				t.Errorf("loc=%q code=%q: %d without Location", loc, code, rec.Code)
			}
		default:
			t.Errorf("loc=%q code=%q: status %d, want 3xx or 400", loc, code, rec.Code)
		}
	})
}

func TestSlowAnswersAfterTheDelay(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	s, _ := startApp(t, testapp.Config{Name: "slowpoke", Clock: clk})
	expect(t, s, http.MethodGet, "/slow?for=soon", 400, "invalid ?for=")
	expect(t, s, http.MethodGet, "/slow?for=1h", 400, "want a duration from 0s to 10m0s")
	done := make(chan response, 1)
	go func() { done <- do(t, http.MethodGet, s.URL()+"/slow?for=2s") }()
	deadline := time.Now().Add(waitTimeout)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the slow request never waited")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case got := <-done:
		t.Fatalf("answered before the delay: %+v", got)
	default:
	}
	clk.Step(2 * time.Second)
	if got := <-done; got.code != 200 || got.body != "slowpoke\n" {
		t.Errorf("GET /slow = %d %q, want 200 with the name", got.code, got.body)
	}
}

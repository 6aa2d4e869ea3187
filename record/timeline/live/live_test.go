package live

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"go.uber.org/goleak"

	"github.com/podgate/podgate/record"
	"github.com/podgate/podgate/test/headless"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func bp(b bool) *bool { return &b }

// podFacts are a pod coming up ready: its container running and ready,
// its readiness probe passing, the gate's verdict, its endpoint.
func podFacts(now time.Time, pod string) []record.Fact {
	return []record.Fact{
		{Time: now, Kind: record.KindContainer, Namespace: "default", Pod: pod, Container: "app",
			State: &record.State{State: "running", Ready: true, ContainerID: pod + "-0"}},
		{Time: now, Kind: record.KindProbe, Namespace: "default", Pod: pod, Container: "app",
			Probe: &record.Probe{Probe: "readiness", Result: "success"}},
		{Time: now, Kind: record.KindGate, Namespace: "default", Pod: pod, Gate: &record.Gate{Ready: true}},
		{Time: now, Kind: record.KindEndpoint, Namespace: "default", Pod: pod,
			Endpoint: &record.Endpoint{Service: "web", Slice: "web-x", Address: "127.0.10.2", Ready: bp(true)}},
	}
}

func readiness(now time.Time, pod, result string) record.Fact {
	return record.Fact{Time: now, Kind: record.KindProbe, Namespace: "default", Pod: pod, Container: "app",
		Probe: &record.Probe{Probe: "readiness", Result: result, Message: "toggled " + result}}
}

func start(t *testing.T, log *record.Log) *Server {
	t.Helper()
	srv, err := Listen("127.0.0.1:0", log, record.Header{Source: "podgate run"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return srv
}

func TestServesThePageAndItsStream(t *testing.T) {
	log := record.NewLog(100)
	srv := start(t, log)
	for _, f := range podFacts(time.Now(), "web-a") {
		log.Record(f)
	}
	tests := []struct {
		name, method, path string
		status             int
		contentType, body  string
	}{
		{"the page", "GET", "/", 200, "text/html; charset=utf-8", `data-live="events"`},
		{"another path", "GET", "/nope", 404, "", "not found"},
		{"not a read", "POST", "/", 405, "", "method not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL()+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.body) ||
				tt.contentType != "" && resp.Header.Get("Content-Type") != tt.contentType {
				t.Errorf("%d %s %q…, want %d %s with %q", resp.StatusCode, resp.Header.Get("Content-Type"), firstLine(body), tt.status, tt.contentType, tt.body)
			}
		})
	}
	t.Run("the stream sends the picture, then each change", func(t *testing.T) {
		resp, err := http.Get(srv.URL() + "/events")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("Content-Type %q", ct)
		}
		frames := make(chan frame)
		go func() {
			defer close(frames)
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(nil, 16<<20)
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok {
					continue
				}
				var f frame
				if err := json.Unmarshal([]byte(data), &f); err != nil {
					t.Errorf("a frame that is not JSON: %v", err)
					return
				}
				frames <- f
			}
		}()
		next := func() frame {
			select {
			case f := <-frames:
				return f
			case <-time.After(30 * time.Second):
				t.Fatal("no frame within 30s")
				return frame{}
			}
		}
		if f := next(); f.Facts != 4 || !strings.Contains(f.SVG, `data-lane="container"`) || !strings.Contains(f.Panel, `data-container="app"`) {
			t.Errorf("first frame: %d facts, svg with a container lane %v, panel with app %v", f.Facts, strings.Contains(f.SVG, `data-lane="container"`), strings.Contains(f.Panel, `data-container="app"`))
		}
		log.Record(readiness(time.Now(), "web-a", "failure"))
		deadline := time.Now().Add(30 * time.Second)
		for f := next(); f.Facts != 5; f = next() {
			if time.Now().After(deadline) {
				t.Fatal("the new fact never came")
			}
		}
		resp.Body.Close()
		for range frames {
		}
	})
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	return s
}

func TestListenTakesLoopbackOnly(t *testing.T) {
	tests := []struct{ addr, want string }{
		{"0.0.0.0:0", `--ui "0.0.0.0:0": 0.0.0.0 is not a loopback address`},
		{":9800", `--ui ":9800": an empty host listens on every interface`},
		{"127.0.0.1", `--ui "127.0.0.1": want HOST:PORT on loopback`},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			srv, err := Listen(tt.addr, record.NewLog(1), record.Header{})
			if err == nil {
				srv.Close()
				t.Fatal("listening")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%v, want %q", err, tt.want)
			}
		})
	}
}

func TestCloseEndsTheStreams(t *testing.T) {
	log := record.NewLog(10)
	srv, err := Listen("127.0.0.1:0", log, record.Header{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL() + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	done := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); done <- err }()
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return with a stream open")
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the stream did not end")
	}
}

// seenJS records, in the page, when the readiness cell of web-a's app
// first shows result: Date.now() of the browser, the same clock as the
// test's.
func seenJS(result string) string {
	return `(() => { window.__seen = null;
	  const check = () => { if (window.__seen === null && document.querySelector('#panel td[data-probe=readiness][data-result=` + result + `]')) { window.__seen = Date.now(); } };
	  new MutationObserver(check).observe(document.getElementById("panel"), {childList: true, subtree: true});
	  check(); return true; })()`
}

func TestLiveViewShowsAToggleWithinASecond(t *testing.T) {
	log := record.NewLog(1000)
	srv := start(t, log)
	b := headless.Start(t, 1280, 800)
	b.Do(t, chromedp.Navigate(srv.URL()))
	b.Poll(t, `parseInt(document.body.getAttribute("data-updates") || "0") >= 1`, 30*time.Second)
	if n := headless.Eval[int](t, b, `document.querySelectorAll("g.lane[data-lane=container]").length`); n != 0 {
		t.Fatalf("%d container lanes before any fact", n)
	}
	for _, f := range podFacts(time.Now(), "web-a") {
		log.Record(f)
	}
	b.Poll(t, `document.querySelectorAll("g.lane[data-lane=container][data-pod='default/web-a']").length === 1`, 30*time.Second)

	// The toggle, off and on: each seen in the page within a second.
	for i, result := range []string{"failure", "success", "failure"} {
		headless.Eval[bool](t, b, seenJS(result))
		if i > 0 && headless.Eval[bool](t, b, `window.__seen !== null`) {
			t.Fatalf("toggle %d: the page shows %s before it happened", i, result)
		}
		recorded := time.Now()
		log.Record(readiness(recorded, "web-a", result))
		b.Poll(t, `window.__seen !== null`, 30*time.Second)
		seen := time.UnixMilli(int64(headless.Eval[float64](t, b, `window.__seen`)))
		lag := seen.Sub(recorded)
		t.Logf("toggle %d (%s): shown after %s", i, result, lag)
		if lag > time.Second {
			t.Errorf("toggle %d (%s) shown %s after it was recorded, want within 1s", i, result, lag)
		}
	}
	ticks := headless.Eval[int](t, b, `document.querySelectorAll("g.lane[data-lane=container] line.tick").length`)
	if ticks != 4 {
		t.Errorf("%d probe ticks, want 4", ticks)
	}
	if p := b.Problems(); len(p) > 0 {
		t.Errorf("the page raised script or console errors: %v", p)
	}
}

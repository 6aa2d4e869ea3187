package autoscalerstats

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// event is one call on a Window at a millisecond offset from t0.
type event struct {
	at      int
	in, out bool // else: report
	proxied bool
}

func in(at int) event        { return event{at: at, in: true} }
func out(at int) event       { return event{at: at, out: true} }
func pin(at int) event       { return event{at: at, in: true, proxied: true} }
func pout(at int) event      { return event{at: at, out: true, proxied: true} }
func report(at int) event    { return event{at: at} }
func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestWindowAveragesAreTimeWeighted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []event
		want   []Report
	}{
		{name: "no request: everything zero", events: []event{report(1000)}, want: []Report{{}}},
		{name: "one request the whole window: concurrency 1",
			events: []event{in(0), out(1000), report(1000)},
			want:   []Report{{AverageConcurrency: 1, RequestCount: 1}}},
		{name: "one request half the window: concurrency 0.5",
			events: []event{in(0), out(500), report(1000)},
			want:   []Report{{AverageConcurrency: 0.5, RequestCount: 1}}},
		{name: "a 1 ms request in a 1 s window: 0.001",
			events: []event{in(0), out(1), report(1000)},
			want:   []Report{{AverageConcurrency: 0.001, RequestCount: 1}}},
		{name: "three back-to-back requests filling the window: concurrency 1, three requests",
			events: []event{in(0), out(300), in(300), out(600), in(600), out(1000), report(1000)},
			want:   []Report{{AverageConcurrency: 1, RequestCount: 3}}},
		{name: "two overlapping requests: their seconds add up",
			events: []event{in(0), in(250), out(750), out(1000), report(1000)},
			want:   []Report{{AverageConcurrency: 1.5, RequestCount: 2}}},
		{name: "a request in flight over a report carries its concurrency into the next window but counts once",
			events: []event{in(500), report(1000), out(1500), report(2000)},
			want: []Report{{AverageConcurrency: 0.5, RequestCount: 1},
				{AverageConcurrency: 0.5, RequestCount: 0}}},
		{name: "proxied requests count in the totals and in the proxied share",
			events: []event{pin(0), in(0), out(500), pout(1000), report(1000)},
			want: []Report{{AverageConcurrency: 1.5, AverageProxiedConcurrency: 1,
				RequestCount: 2, ProxiedRequestCount: 1}}},
		{name: "the window is the time since the last report, not a fixed second",
			events: []event{in(0), out(1000), report(2000)},
			want:   []Report{{AverageConcurrency: 0.5, RequestCount: 1}}},
		{name: "an event stamped before the last change adds no time",
			events: []event{in(500), out(400), report(1000)},
			want:   []Report{{AverageConcurrency: 0, RequestCount: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWindow(t0)
			var got []Report
			for _, e := range tc.events {
				switch {
				case e.in:
					w.In(ms(e.at), e.proxied)
				case e.out:
					w.Out(ms(e.at), e.proxied)
				default:
					got = append(got, w.Report(ms(e.at)))
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d reports, want %d", len(got), len(tc.want))
			}
			for i := range got {
				g, w := got[i], tc.want[i]
				if !near(g.AverageConcurrency, w.AverageConcurrency) || !near(g.AverageProxiedConcurrency, w.AverageProxiedConcurrency) ||
					g.RequestCount != w.RequestCount || g.ProxiedRequestCount != w.ProxiedRequestCount {
					t.Errorf("report %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func TestWindowInAndOutAllocateNothing(t *testing.T) {
	w := NewWindow(t0)
	now := t0
	if n := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		w.In(now, true)
		w.Out(now, true)
	}); n != 0 {
		t.Fatalf("In+Out allocate %v times", n)
	}
}

// scrape reads the Stat as Knative's autoscaler does: Accept:
// application/protobuf, Content-Type checked, body decoded.
func scrape(t *testing.T, h http.Handler, accept string) (*Stat, *http.Response) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://10.0.0.1:9090/metrics", nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	body, _ := io.ReadAll(resp.Body)
	var s Stat
	if err := proto.Unmarshal(body, &s); err != nil {
		t.Fatalf("body %q is not a Stat: %v", body, err)
	}
	return &s, resp
}

func TestReporterReportsEveryPeriodOnTheClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	r := NewReporter(clk, "hello-00001-deployment-abc")
	h := r.Handler()

	s, resp := scrape(t, h, ContentType)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != ContentType {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !proto.Equal(s, &Stat{PodName: "hello-00001-deployment-abc"}) {
		t.Fatalf("before the first report: %v, want the pod name alone", s)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitForTimer(t, clk)

	// Period 1: two requests for the whole second, one of them the
	// activator's, and a third for a quarter second.
	r.In(clk.Now(), true)
	r.In(clk.Now(), false)
	clk.Step(250 * time.Millisecond)
	r.In(clk.Now(), false)
	clk.Step(250 * time.Millisecond)
	r.Out(clk.Now(), false)
	clk.Step(500 * time.Millisecond)
	want := &Stat{PodName: "hello-00001-deployment-abc", AverageConcurrentRequests: 2.25,
		AverageProxiedConcurrentRequests: 1, RequestCount: 3, ProxiedRequestCount: 1, ProcessUptime: 1}
	waitForStat(t, r, want)

	waitForTimer(t, clk)

	// Period 2: the two long requests end halfway; nothing arrives.
	clk.Step(500 * time.Millisecond)
	r.Out(clk.Now(), true)
	r.Out(clk.Now(), false)
	clk.Step(500 * time.Millisecond)
	want = &Stat{PodName: "hello-00001-deployment-abc", AverageConcurrentRequests: 1,
		AverageProxiedConcurrentRequests: 0.5, ProcessUptime: 2}
	waitForStat(t, r, want)

	got, _ := scrape(t, h, "")
	if !proto.Equal(got, want) {
		t.Errorf("the handler serves %v, want %v", got, want)
	}
}

func TestReportsKeepToTheGridLikeATicker(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	r := NewReporter(clk, "p")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()

	// A report 1.5 s late (a stalled process): the missed second is
	// dropped, and the next report is still at 3 s, not 3.5 s.
	waitForTimer(t, clk)
	r.In(clk.Now(), false)
	clk.Step(2500 * time.Millisecond)
	waitForStat(t, r, &Stat{PodName: "p", AverageConcurrentRequests: 1, RequestCount: 1, ProcessUptime: 2.5})
	waitForTimer(t, clk)
	clk.Step(499 * time.Millisecond)
	if got := r.Current().GetProcessUptime(); got != 2.5 {
		t.Fatalf("reported again before the grid's 3 s: uptime %v", got)
	}
	clk.Step(time.Millisecond)
	waitForStat(t, r, &Stat{PodName: "p", AverageConcurrentRequests: 1, ProcessUptime: 3})
}

func TestHandlerAnswersAsQueueProxy(t *testing.T) {
	r := NewReporter(clocktesting.NewFakeClock(t0), "p")
	h := r.Handler()
	for _, tc := range []struct {
		name, method, path, accept string
		code                       int
		protobuf                   bool
	}{
		{name: "the autoscaler's scrape", method: http.MethodGet, path: "/metrics", accept: ContentType, code: 200, protobuf: true},
		{name: "no Accept: protobuf all the same", method: http.MethodGet, path: "/metrics", code: 200, protobuf: true},
		{name: "Accept text/plain: protobuf all the same (no negotiation)", method: http.MethodGet, path: "/metrics", accept: "text/plain", code: 200, protobuf: true},
		{name: "any method", method: http.MethodPost, path: "/metrics", code: 200, protobuf: true},
		{name: "another path: 404", method: http.MethodGet, path: "/", code: 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "http://10.0.0.1:9090"+tc.path, nil)
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.code {
				t.Fatalf("status %d, want %d", rec.Code, tc.code)
			}
			if got := rec.Header().Get("Content-Type") == ContentType; got != tc.protobuf {
				t.Fatalf("Content-Type %q", rec.Header().Get("Content-Type"))
			}
			if tc.protobuf {
				var s Stat
				if err := proto.Unmarshal(rec.Body.Bytes(), &s); err != nil || s.GetPodName() != "p" {
					t.Fatalf("body %v (%v), want the Stat of pod p", &s, err)
				}
			}
		})
	}
}

func TestProxiedIsTheActivatorsHeaderExactly(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  bool
	}{{"activator", true}, {"", false}, {"Activator", false}, {"other", false}} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		if tc.value != "" {
			req.Header.Set("k-proxy-request", tc.value)
		}
		if got := Proxied(req); got != tc.want {
			t.Errorf("K-Proxy-Request %q: proxied %v, want %v", tc.value, got, tc.want)
		}
	}
}

// waitForTimer waits until Run has made its timer, so a Step fires it.
func waitForTimer(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("Run made no timer within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// waitForStat polls the served Stat until it is want (the ticker's
// report runs on Run's goroutine).
func waitForStat(t *testing.T, r *Reporter, want *Stat) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := r.Current()
		if statNear(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Stat %v, want %v", got, want)
		}
		time.Sleep(time.Millisecond)
	}
}

func statNear(a, b *Stat) bool {
	return a.GetPodName() == b.GetPodName() && a.GetTimestamp() == b.GetTimestamp() &&
		near(a.GetAverageConcurrentRequests(), b.GetAverageConcurrentRequests()) &&
		near(a.GetAverageProxiedConcurrentRequests(), b.GetAverageProxiedConcurrentRequests()) &&
		near(a.GetRequestCount(), b.GetRequestCount()) && near(a.GetProxiedRequestCount(), b.GetProxiedRequestCount()) &&
		near(a.GetProcessUptime(), b.GetProcessUptime())
}

// BenchmarkWindowInOut is the statistics' share of every proxied request
// (the clock's reads included), from every core at once.
//
//	go test -run '^$' -bench WindowInOut -benchmem ./gate/autoscalerstats/
func BenchmarkWindowInOut(b *testing.B) {
	w := NewWindow(time.Now())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.In(time.Now(), false)
			w.Out(time.Now(), false)
		}
	})
}

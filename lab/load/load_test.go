package load_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podgate/podgate/lab/load"
)

// countingServer is a real loopback server that counts the connections it
// accepted and remembers the Host headers it saw.
type countingServer struct {
	*httptest.Server
	conns atomic.Int64
	mu    sync.Mutex
	hosts map[string]int
}

func newCountingServer(t *testing.T, h http.HandlerFunc) *countingServer {
	t.Helper()
	cs := &countingServer{hosts: map[string]int{}}
	cs.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs.mu.Lock()
		cs.hosts[r.Host]++
		cs.mu.Unlock()
		h(w, r)
	}))
	cs.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			cs.conns.Add(1)
		}
	}
	cs.Start()
	t.Cleanup(cs.Close)
	return cs
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestLoadRecordsEveryRequest(t *testing.T) {
	long := strings.Repeat("x", 1000)
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("pod-a " + long))
	})
	begin := time.Now()
	l, err := load.Start(load.Config{URL: srv.URL + "/", Host: "svc.default.example.com", Workers: 4, Rate: 400, BodyBytes: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Wait(waitCtx(t), "200 requests", func(r *load.Recording) bool { return len(r.Requests) >= 200 }); err != nil {
		t.Fatal(err)
	}
	rec := l.Stop(waitCtx(t))
	elapsed := time.Since(begin)

	if len(rec.InFlight) != 0 {
		t.Errorf("%d requests in flight after Stop", len(rec.InFlight))
	}
	if f := rec.Failures(); len(f) != 0 {
		t.Errorf("failures against a healthy server:\n%s", load.FormatRequests(f, begin, 5))
	}
	workers := map[int]bool{}
	for i, q := range rec.Requests {
		workers[q.Worker] = true
		if q.Body != "pod-a xxxx" {
			t.Fatalf("request %d body %q, want the first 10 bytes", i, q.Body)
		}
		if i > 0 && q.Start.Before(rec.Requests[i-1].Start) {
			t.Fatalf("requests not ordered by start at %d", i)
		}
		if q.Duration <= 0 || q.Start.Before(begin) {
			t.Fatalf("request %d: start %v, duration %v", i, q.Start, q.Duration)
		}
	}
	if len(workers) != 4 {
		t.Errorf("requests came from workers %v, want 4", workers)
	}
	// The pacer's bound is exact: every worker sends at most once per
	// interval, plus its first request.
	if max := 400*elapsed.Seconds() + 4; float64(len(rec.Requests)) > max {
		t.Errorf("%d requests in %s exceed the rate bound of %.0f", len(rec.Requests), elapsed, max)
	}
	srv.mu.Lock()
	hosts := srv.hosts
	srv.mu.Unlock()
	if len(hosts) != 1 || hosts["svc.default.example.com"] != len(rec.Requests) {
		t.Errorf("Host headers seen %v, want every request with svc.default.example.com", hosts)
	}
	// Keep-alive: connections are reused, not one per request.
	if n := srv.conns.Load(); n == 0 || n > int64(len(rec.Requests)/4) {
		t.Errorf("%d connections for %d requests: want kept-alive connections", n, len(rec.Requests))
	}
}

func TestLoadRecordsFailures(t *testing.T) {
	t.Run("statuses other than 2xx are failures with their body", func(t *testing.T) {
		srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "activator request timeout", http.StatusGatewayTimeout)
		})
		l, err := load.Start(load.Config{URL: srv.URL, Workers: 2, Rate: 200})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Wait(waitCtx(t), "10 requests", func(r *load.Recording) bool { return len(r.Requests) >= 10 }); err != nil {
			t.Fatal(err)
		}
		rec := l.Stop(waitCtx(t))
		if n := len(rec.WithStatus(504, "activator request timeout")); n != len(rec.Requests) || n != len(rec.Failures()) {
			t.Errorf("%d of %d requests are 504s, %d failures: want all", n, len(rec.Requests), len(rec.Failures()))
		}
	})
	t.Run("a refused connection is a transport error", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + ln.Addr().String() + "/"
		ln.Close()
		l, err := load.Start(load.Config{URL: url, Workers: 2, Rate: 200})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Wait(waitCtx(t), "10 requests", func(r *load.Recording) bool { return len(r.Requests) >= 10 }); err != nil {
			t.Fatal(err)
		}
		rec := l.Stop(waitCtx(t))
		for _, q := range rec.Requests {
			if q.Status != 0 || !strings.Contains(q.Err, "refused") || q.OK() {
				t.Fatalf("request %+v: want a refused connection", q)
			}
		}
		if rec.Counts()["error"] != len(rec.Requests) {
			t.Errorf("counts %v: want all errors", rec.Counts())
		}
	})
}

func TestLoadStop(t *testing.T) {
	t.Run("held requests are let finish", func(t *testing.T) {
		release := make(chan struct{})
		srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
			<-release
			_, _ = w.Write([]byte("released"))
		})
		l, err := load.Start(load.Config{URL: srv.URL, Workers: 3, Rate: 100})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Wait(waitCtx(t), "3 held", func(r *load.Recording) bool { return len(r.InFlight) == 3 }); err != nil {
			t.Fatal(err)
		}
		snap := l.Snapshot()
		if len(snap.Requests) != 0 || len(snap.InFlight) != 3 {
			t.Fatalf("snapshot %d done, %d in flight; want 0 and 3", len(snap.Requests), len(snap.InFlight))
		}
		go func() {
			time.Sleep(50 * time.Millisecond) // Stop must wait, not cancel
			close(release)
		}()
		rec := l.Stop(waitCtx(t))
		if len(rec.Requests) != 3 || len(rec.Failures()) != 0 || len(rec.InFlight) != 0 {
			t.Errorf("after Stop: %s", rec.Summary(time.Time{}))
		}
		for _, q := range rec.Requests {
			if q.Body != "released" {
				t.Errorf("request %+v: want the released answer", q)
			}
		}
	})
	t.Run("requests still held when the stop deadline ends are cancelled and count as failures", func(t *testing.T) {
		srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		})
		l, err := load.Start(load.Config{URL: srv.URL, Workers: 2, Rate: 100})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Wait(waitCtx(t), "2 held", func(r *load.Recording) bool { return len(r.InFlight) == 2 }); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		rec := l.Stop(ctx)
		if len(rec.Requests) != 2 || len(rec.Failures()) != 2 {
			t.Fatalf("after Stop: %s", rec.Summary(time.Time{}))
		}
		for _, q := range rec.Requests {
			if !strings.Contains(q.Err, "context canceled") {
				t.Errorf("request %+v: want the cancellation", q)
			}
		}
	})
}

func TestLoadWaitNamesWhatItWaitedFor(t *testing.T) {
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {})
	l, err := load.Start(load.Config{URL: srv.URL, Workers: 1, Rate: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop(t.Context())
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err = l.Wait(ctx, "a 504", func(r *load.Recording) bool { return len(r.WithStatus(504, "")) > 0 })
	if err == nil || !strings.Contains(err.Error(), "a 504") || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("err = %v, want a timeout naming what was awaited", err)
	}
}

func TestLoadRefusesAddressesOffLoopback(t *testing.T) {
	for _, tc := range []struct{ name, url, want string }{
		{"a private address", "http://10.0.0.1:8080/", "loopback"},
		{"every address", "http://0.0.0.0:8080/", "loopback"},
		{"a host name", "http://example.com/", "loopback"},
		{"https", "https://127.0.0.1:8443/", "want http://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := load.Start(load.Config{URL: tc.url}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

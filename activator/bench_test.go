package activator

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podgate/podgate/record"
)

// BenchmarkProxy measures requests through the activator against the same
// upstream reached directly and through a bare httputil.ReverseProxy, so
// the figures separate the cost of a proxy hop from the activator's own
// (queue, balancing, timeout, retry bookkeeping). Reported: ns/op (wall
// time per request across all clients; req/s = 1e9 / ns/op), p99-µs,
// cpu-ns/op (the process's CPU time per request: steadier than ns/op on
// a shared machine, whose wall time counts others' work too) and
// allocs/op (client, proxy and upstream together). Run with
//
//	go test -run '^$' -bench BenchmarkProxy -benchtime 5s ./activator/
func BenchmarkProxy(b *testing.B) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isActivatorProbe(r) {
			_, _ = io.WriteString(w, "queue")
			return
		}
		_, _ = io.WriteString(w, "hello world\n")
	}))
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL)

	b.Run("direct", func(b *testing.B) { benchFront(b, upstream.URL) })

	b.Run("plain-reverseproxy", func(b *testing.B) {
		tr := &http.Transport{MaxIdleConnsPerHost: 1024}
		defer tr.CloseIdleConnections()
		front := httptest.NewServer(&httputil.ReverseProxy{
			Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(u); pr.SetXForwarded() },
			Transport: tr,
		})
		defer front.Close()
		benchFront(b, front.URL)
	})

	b.Run("activator", func(b *testing.B) { benchTarget(b, upstream.URL, Config{}) })
	// The same with every decision and request recorded (into a sink that
	// keeps nothing): what `podgate run --record` adds per request.
	b.Run("activator-recorded", func(b *testing.B) { benchTarget(b, upstream.URL, Config{Recorder: record.Discard}) })
}

// benchTarget measures requests through a target with cfg whose one pod
// is upstream.
func benchTarget(b *testing.B, upstream string, cfg Config) {
	tg, err := NewTarget("bench", cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer tg.Close()
	tg.Update([]Pod{{Name: "a", Addr: strings.TrimPrefix(upstream, "http://"), Ready: true}})
	for deadline := time.Now().Add(10 * time.Second); tg.Status().Ready != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("backend never ready")
		}
	}
	front := httptest.NewServer(tg)
	defer front.Close()
	benchFront(b, front.URL)
}

// benchFront sends GETs from 8×GOMAXPROCS clients and reports the p99.
func benchFront(b *testing.B, target string) {
	tr := &http.Transport{MaxIdleConnsPerHost: 1024}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var (
		mu  sync.Mutex
		all []time.Duration
	)
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	cpu0 := processCPU()
	b.RunParallel(func(pb *testing.PB) {
		var lat []time.Duration
		for pb.Next() {
			start := time.Now()
			resp, err := client.Get(target)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
			lat = append(lat, time.Since(start))
		}
		mu.Lock()
		all = append(all, lat...)
		mu.Unlock()
	})
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	if len(all) > 0 {
		slices.Sort(all)
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
	}
}

// processCPU is the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRelease measures how long a held request takes to come back
// once its pod's endpoint turns ready (issue 6 asks for under 50 ms): the
// time from Update to the client having the response.
//
//	go test -run '^$' -bench BenchmarkRelease ./activator/
func BenchmarkRelease(b *testing.B) {
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "queue")
	}))
	defer gate.Close()
	tg, err := NewTarget("bench", Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer tg.Close()
	front := httptest.NewServer(tg)
	defer front.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	pod := Pod{Name: "a", Addr: strings.TrimPrefix(gate.URL, "http://")}
	tg.Update([]Pod{pod})
	for deadline := time.Now().Add(10 * time.Second); tg.Status().Backends[0].Probes == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("gate never probed")
		}
	}
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		done := make(chan time.Time, 1)
		go func() {
			resp, err := client.Get(front.URL)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			done <- time.Now()
		}()
		for tg.Status().Queued != 1 {
			time.Sleep(50 * time.Microsecond)
		}
		pod.Ready = true
		start := time.Now()
		tg.Update([]Pod{pod})
		lat = append(lat, (<-done).Sub(start))
		// A new name each round: the next pod starts unready again with
		// the fast path off.
		pod = Pod{Name: "a" + strconv.Itoa(i), Addr: pod.Addr}
		tg.Update([]Pod{pod})
		for deadline := time.Now().Add(10 * time.Second); tg.Status().Backends[0].Probes == 0; time.Sleep(50 * time.Microsecond) {
			if time.Now().After(deadline) {
				b.Fatal("gate never probed")
			}
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "median-µs")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
}

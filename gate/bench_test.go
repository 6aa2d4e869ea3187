package gate

import (
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/gate/contract"
)

// benchUpstream is a minimal app: "ok" to every request.
func benchUpstream(b *testing.B, addr string) (*http.Server, string, chan struct{}) {
	b.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return srv, ln.Addr().String(), done
}

// serveHandler serves h on 127.0.0.1:0 until the benchmark ends.
func serveHandler(b *testing.B, h http.Handler) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	b.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return ln.Addr().String()
}

// BenchmarkProxy measures requests through the gate against the same
// upstream reached directly and through a plain httputil.ReverseProxy
// (default transport), from 32 concurrent keep-alive clients. ns/op is
// per request with all 32 in flight; p50/p99 are per-request latencies;
// allocs/op count the client, the proxy and the upstream together (all
// run in this process), so the gate's own are gate minus direct.
//
//	go test -run '^$' -bench Proxy -benchmem -count 3 ./gate/
func BenchmarkProxy(b *testing.B) {
	srv, upstream, done := benchUpstream(b, "127.0.0.1:0")
	defer func() {
		_ = srv.Close()
		<-done
	}()
	target, _ := url.Parse("http://" + upstream)
	plain := serveHandler(b, httputil.NewSingleHostReverseProxy(target))

	b.Run("direct", func(b *testing.B) { benchRequests(b, "http://"+upstream+"/") })
	b.Run("plain-reverseproxy", func(b *testing.B) { benchRequests(b, "http://"+plain+"/") })
	b.Run("gate", func(b *testing.B) {
		tg := startGate(b, gateConfig(b, upstream), Options{})
		tg.waitReady(b, true)
		benchRequests(b, tg.url("/"))
	})
}

// processCPU is the CPU time this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchRequests(b *testing.B, url string) {
	const conns = 32
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var mu sync.Mutex
	var lat []time.Duration
	var failed atomic.Int64
	b.SetParallelism((conns + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	b.RunParallel(func(pb *testing.PB) {
		local := make([]time.Duration, 0, 1024)
		for pb.Next() {
			start := time.Now()
			resp, err := client.Get(url)
			if err != nil {
				failed.Add(1)
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				failed.Add(1)
			}
			local = append(local, time.Since(start))
		}
		mu.Lock()
		lat = append(lat, local...)
		mu.Unlock()
	})
	b.StopTimer()
	// CPU time per request (client, proxy and upstream of this process):
	// steadier than ns/op on a shared machine, whose wall time counts
	// others' work too.
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	if n := failed.Load(); n > 0 {
		b.Errorf("%d requests failed", n)
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
}

// BenchmarkRideThrough is docs/facts.md §4's measurement: 16 clients send requests
// back to back for 3 s while the upstream is stopped at 1 s and started
// again on the same port at 2 s. It reports the requests and the failed
// ones (transport errors and non-200 answers) the clients saw, through the
// gate and through a plain httputil.ReverseProxy (queue-proxy answers such
// refusals with a 502 as this one does; Knative measured 5,925 failed of
// 50,336). "graceful" stops the upstream as on SIGTERM (in-flight requests
// finish); "kill" drops its connections as a crash does (in-flight
// requests are lost).
//
//	go test -run '^$' -bench RideThrough -benchtime 1x ./gate/
func BenchmarkRideThrough(b *testing.B) {
	for _, proxy := range []string{"gate", "plain-reverseproxy"} {
		for _, stop := range []string{"graceful", "kill"} {
			b.Run(proxy+"/"+stop, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					ok, failed, example := rideThroughOnce(b, proxy, stop == "kill")
					b.ReportMetric(float64(ok+failed), "requests")
					b.ReportMetric(float64(failed), "failed")
					if failed > 0 {
						b.Logf("%s/%s: %d of %d failed, e.g. %s", proxy, stop, failed, ok+failed, example)
					}
				}
			})
		}
	}
}

func rideThroughOnce(b *testing.B, proxy string, kill bool) (ok, failed int64, example string) {
	srv, addr, done := benchUpstream(b, "127.0.0.1:0")
	var front string
	switch proxy {
	case "gate":
		tg := startGate(b, gateConfig(b, addr), Options{})
		tg.waitReady(b, true)
		front = tg.url("/")
	default:
		target, _ := url.Parse("http://" + addr)
		rp := httputil.NewSingleHostReverseProxy(target)
		rp.ErrorLog = log.New(io.Discard, "", 0)
		front = "http://" + serveHandler(b, rp) + "/"
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var nOK, nFailed atomic.Int64
	var exampleOnce sync.Once
	stopLoad := make(chan struct{})
	var wg sync.WaitGroup
	for c := 0; c < 16; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stopLoad:
					return
				default:
				}
				resp, err := client.Get(front)
				if err != nil {
					nFailed.Add(1)
					exampleOnce.Do(func() { example = err.Error() })
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					nFailed.Add(1)
					exampleOnce.Do(func() { example = fmt.Sprintf("%d %s", resp.StatusCode, body) })
					continue
				}
				nOK.Add(1)
			}
		}()
	}
	time.Sleep(time.Second)
	if kill {
		_ = srv.Close()
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), testWait)
		_ = srv.Shutdown(ctx)
		cancel()
	}
	<-done
	time.Sleep(time.Second)
	srv, _, done = benchUpstream(b, addr)
	time.Sleep(time.Second)
	close(stopLoad)
	wg.Wait()
	_ = srv.Close()
	<-done
	return nOK.Load(), nFailed.Load(), example
}

// BenchmarkHeldHealthCheck measures, through a whole gate, the time from
// the serving container accepting connections to a health check that was
// held (aggressive TCP probe, pod not ready yet) being answered 200: what
// the kubelet or activator waiting on the gate sees. queue-proxy holds
// such a check too, retrying its probe every 50 ms.
//
//	go test -run '^$' -bench HeldHealthCheck -benchtime 200x ./gate/
func BenchmarkHeldHealthCheck(b *testing.B) {
	addr, port := closedPort(b)
	host, _ := splitHostPort(b, addr)
	cfg := contract.Defaults()
	cfg.UpstreamHost, cfg.UserPort, cfg.DrainQuietPeriod = host, port, 0
	cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(port, 0)}
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	var lat []time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		g, err := New(Options{Config: cfg})
		if err != nil {
			b.Fatal(err)
		}
		var ls Listeners
		for _, dst := range []*net.Listener{&ls.Serving, &ls.Admin, &ls.Metrics} {
			if *dst, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
				b.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- g.Serve(ctx, ls) }()
		req, _ := http.NewRequest(http.MethodGet, "http://"+ls.Serving.Addr().String()+"/", nil)
		req.Header.Set("User-Agent", "kube-probe/1.37")
		req.Header.Set(contract.NetworkProbeHeader, queueName)
		answered := make(chan time.Time, 1)
		go func() {
			resp, err := client.Do(req)
			at := time.Now()
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Errorf("held check: %v %v", resp, err)
			} else {
				resp.Body.Close()
			}
			answered <- at
		}()
		deadline := time.Now().Add(testWait)
		for g.HealthChecksHeld() == 0 {
			if time.Now().After(deadline) {
				b.Fatal("the health check is not held")
			}
			time.Sleep(50 * time.Microsecond)
		}
		// Let the prober reach its steady backoff, as for a container
		// that takes a while to start.
		time.Sleep(20*time.Millisecond + time.Duration(rand.Int64N(int64(20*time.Millisecond))))
		b.StartTimer()
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		select {
		case at := <-answered:
			lat = append(lat, at.Sub(start))
		case <-time.After(testWait):
			b.Fatal("the held check is not answered after the port opened")
		}
		b.StopTimer()
		cancel()
		select {
		case err := <-served:
			if err != nil {
				b.Fatal(err)
			}
		case <-time.After(testWait):
			b.Fatal("Serve did not return")
		}
		ln.Close()
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkReadyHealthCheck measures a health check of a ready gate, one
// at a time over a kept-alive connection: with a periodic readiness probe
// (answered from the state) and with an aggressive one (periodSeconds 0,
// Knative's default), where each check probes the serving container once
// more (a TCP connect to its port).
//
//	go test -run '^$' -bench ReadyHealthCheck -count 3 ./gate/
func BenchmarkReadyHealthCheck(b *testing.B) {
	for _, tc := range []struct {
		name   string
		period int32
	}{{"periodic", 10}, {"aggressive", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			srv, addr, done := benchUpstream(b, "127.0.0.1:0")
			b.Cleanup(func() { _ = srv.Close(); <-done })
			host, port := splitHostPort(b, addr)
			cfg := contract.Defaults()
			cfg.UpstreamHost, cfg.UserPort, cfg.DrainQuietPeriod = host, port, 0
			cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(port, tc.period)}
			tg := startGate(b, cfg, Options{})
			tg.waitReady(b, true)
			req, _ := http.NewRequest(http.MethodGet, tg.url("/"), nil)
			req.Header.Set("User-Agent", "kube-probe/1.37")
			req.Header.Set(contract.NetworkProbeHeader, queueName)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				resp, err := tg.client.Do(req)
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("health check: %v %v", resp, err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/podgate/podgate/gate"
)

const throughputConns = 32

// pathStats add up one path's runs.
type pathStats struct {
	name     string
	requests int64
	failed   int64
	window   time.Duration
	lat      []time.Duration
	mallocs  uint64
	bytes    uint64
	cpu      time.Duration

	lastRequests int64 // of the latest run
	lastWindow   time.Duration
	lastP99      time.Duration
}

func (s *pathStats) rate() float64 { return float64(s.requests) / s.window.Seconds() }

func (s *pathStats) perRequest(v float64) float64 { return v / float64(max(s.requests, 1)) }

type throughputResult struct {
	direct, plain, pooled, gate *pathStats
}

// measureThroughput runs the paths in turn, rounds times, each for the
// duration after a short warm-up. Client and proxies run in this process,
// the upstream in its own, so this process's allocations and CPU are the
// clients' plus the proxy's: the gate's own are its figures minus direct's.
func measureThroughput(ctx context.Context, p *pod, o options) (throughputResult, error) {
	target := &url.URL{Scheme: "http", Host: p.appAddr()}
	plain := httputil.NewSingleHostReverseProxy(target)
	plain.ErrorLog = log.New(io.Discard, "", 0)
	pooledRP := httputil.NewSingleHostReverseProxy(target)
	pooledRP.ErrorLog = plain.ErrorLog
	pooledTransport := &http.Transport{MaxIdleConnsPerHost: throughputConns, DisableCompression: true}
	defer pooledTransport.CloseIdleConnections()
	pooledRP.Transport = pooledTransport

	plainAddr, stopPlain, err := serve(plain)
	if err != nil {
		return throughputResult{}, err
	}
	defer stopPlain()
	pooledAddr, stopPooled, err := serve(pooledRP)
	if err != nil {
		return throughputResult{}, err
	}
	defer stopPooled()
	gateAddr, stopGate, err := startInProcessGate(p)
	if err != nil {
		return throughputResult{}, err
	}
	defer stopGate()

	r := throughputResult{
		direct: &pathStats{name: "direct (no proxy)"},
		plain:  &pathStats{name: "plain httputil.ReverseProxy"},
		pooled: &pathStats{name: "ReverseProxy, 32 idle conns (info)"},
		gate:   &pathStats{name: "gate (in-process)"},
	}
	paths := []struct {
		s   *pathStats
		url string
	}{
		{r.direct, "http://" + p.appAddr() + "/"},
		{r.plain, "http://" + plainAddr + "/"},
		{r.pooled, "http://" + pooledAddr + "/"},
		{r.gate, "http://" + gateAddr + "/"},
	}
	for round := 1; round <= o.rounds; round++ {
		for _, path := range paths {
			if ctx.Err() != nil {
				return r, ctx.Err()
			}
			runOnce(path.s, path.url, o.duration)
			fmt.Printf("  round %d  %-36s %8.0f req/s  p99 %s\n", round, path.s.name,
				float64(path.s.lastRequests)/path.s.lastWindow.Seconds(), ms(path.s.lastP99))
		}
	}
	fmt.Printf("  %-36s %9s %9s %9s %8s %7s %9s %7s\n", "totals", "req/s", "p50", "p99", "allocs", "B", "CPU µs", "failed")
	for _, path := range paths {
		s := path.s
		slices.Sort(s.lat)
		fmt.Printf("  %-36s %9.0f %9s %9s %8.1f %7.0f %9.1f %7d\n", s.name, s.rate(), ms(quantile(s.lat, 0.5)), ms(quantile(s.lat, 0.99)),
			s.perRequest(float64(s.mallocs)), s.perRequest(float64(s.bytes)), s.perRequest(float64(s.cpu.Microseconds())), s.failed)
	}
	fmt.Println("  (allocs, B and CPU are per request, this process: clients + proxy; the upstream runs apart)")
	fmt.Printf("  gate's own per proxied request: %.1f allocs, %.0f B (gate − direct); plain proxy's: %.1f allocs, %.0f B\n",
		r.gateAllocs(), r.gateBytes(), r.plain.perRequest(float64(r.plain.mallocs))-r.direct.perRequest(float64(r.direct.mallocs)),
		r.plain.perRequest(float64(r.plain.bytes))-r.direct.perRequest(float64(r.direct.bytes)))
	return r, nil
}

func (r throughputResult) gateAllocs() float64 {
	return r.gate.perRequest(float64(r.gate.mallocs)) - r.direct.perRequest(float64(r.direct.mallocs))
}

func (r throughputResult) gateBytes() float64 {
	return r.gate.perRequest(float64(r.gate.bytes)) - r.direct.perRequest(float64(r.direct.bytes))
}

func runOnce(s *pathStats, url string, d time.Duration) {
	runtime.GC()
	l := startLoad(url, throughputConns, false)
	time.Sleep(500 * time.Millisecond)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0 := cpuTime()
	l.measure(true)
	time.Sleep(d)
	l.measure(false)
	cpu1 := cpuTime()
	runtime.ReadMemStats(&m1)
	res := l.finish()
	s.requests += res.requests()
	s.failed += res.failed
	s.window += res.window
	s.lat = append(s.lat, res.lat...)
	s.mallocs += m1.Mallocs - m0.Mallocs
	s.bytes += m1.TotalAlloc - m0.TotalAlloc
	s.cpu += cpu1 - cpu0
	s.lastRequests, s.lastWindow, s.lastP99 = res.requests(), res.window, res.pct(0.99)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serve serves h on 127.0.0.1 at a free port.
func serve(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return ln.Addr().String(), func() { _ = srv.Close(); <-done }, nil
}

// startInProcessGate runs the gate with the injected configuration in this
// process, on free ports of 127.0.0.1, aimed at the pod's test app. The
// drain quiet period is 0 so that it stops at once afterwards.
func startInProcessGate(p *pod) (string, func(), error) {
	cfg := p.cfg
	cfg.DrainQuietPeriod = 0
	g, err := gate.New(gate.Options{Config: cfg})
	if err != nil {
		return "", nil, err
	}
	var ls gate.Listeners
	for _, dst := range []*net.Listener{&ls.Serving, &ls.Admin, &ls.Metrics} {
		if *dst, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			ls.Close()
			return "", nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, ls) }()
	stop := func() {
		cancel()
		<-done
	}
	deadline := time.Now().Add(startWait)
	for !g.Ready() {
		if time.Now().After(deadline) {
			stop()
			return "", nil, errors.New("the in-process gate did not become ready")
		}
		time.Sleep(time.Millisecond)
	}
	return ls.Serving.Addr().String(), stop, nil
}

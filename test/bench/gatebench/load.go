package main

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// load is closed-loop traffic: conns clients, each on a keep-alive
// connection of its own, sending GETs back to back. Requests that start
// while measuring is on are counted.
type load struct {
	url    string
	tr     *http.Transport
	client *http.Client
	stop   chan struct{}
	wg     sync.WaitGroup

	measuring atomic.Bool
	ok        atomic.Int64
	failed    atomic.Int64
	mu        sync.Mutex
	lat       []time.Duration
	example   string
	t0, t1    time.Time
}

// loadResult is what the clients saw while measuring.
type loadResult struct {
	ok, failed int64
	window     time.Duration
	lat        []time.Duration // sorted
	example    string          // one failure, if any
}

func startLoad(url string, conns int, measuring bool) *load {
	l := &load{
		url:  url,
		tr:   &http.Transport{MaxConnsPerHost: conns, MaxIdleConnsPerHost: conns, DisableCompression: true},
		stop: make(chan struct{}),
	}
	l.client = &http.Client{Transport: l.tr}
	if measuring {
		l.measure(true)
	}
	for range conns {
		l.wg.Add(1)
		go l.client1()
	}
	return l
}

func (l *load) client1() {
	defer l.wg.Done()
	local := make([]time.Duration, 0, 4096)
	defer func() {
		l.mu.Lock()
		l.lat = append(l.lat, local...)
		l.mu.Unlock()
	}()
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		counted := l.measuring.Load()
		start := time.Now()
		resp, err := l.client.Get(l.url)
		if err != nil {
			if counted {
				l.fail(err.Error())
			}
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if !counted {
			continue
		}
		if resp.StatusCode != http.StatusOK {
			l.fail(fmt.Sprintf("%d %.100q", resp.StatusCode, body))
			continue
		}
		l.ok.Add(1)
		local = append(local, d)
	}
}

func (l *load) fail(example string) {
	if l.failed.Add(1) == 1 {
		l.mu.Lock()
		l.example = example
		l.mu.Unlock()
	}
}

// measure starts or ends the measured window.
func (l *load) measure(on bool) {
	if on {
		l.t0 = time.Now()
	} else {
		l.t1 = time.Now()
	}
	l.measuring.Store(on)
}

// finish stops the clients and returns the measured window's figures.
func (l *load) finish() loadResult {
	if l.measuring.Load() {
		l.measure(false)
	}
	close(l.stop)
	l.wg.Wait()
	l.tr.CloseIdleConnections()
	slices.Sort(l.lat)
	return loadResult{ok: l.ok.Load(), failed: l.failed.Load(), window: l.t1.Sub(l.t0), lat: l.lat, example: l.example}
}

func (r loadResult) requests() int64 { return r.ok + r.failed }

func (r loadResult) rate() float64 { return float64(r.requests()) / r.window.Seconds() }

// pct is the q-quantile (nearest rank) of the latencies.
func (r loadResult) pct(q float64) time.Duration { return quantile(r.lat, q) }

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

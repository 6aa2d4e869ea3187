package readiness

import (
	"context"
	"math/rand/v2"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/podgate/podgate/probe"
)

// BenchmarkReadinessPropagation measures the time from the serving
// container accepting connections to the gate answering ready, with a
// periodSeconds: 0 (aggressive) TCP probe, as Knative's default. Knative's
// queue-proxy measured 21-24 ms median (it retries every 50 ms).
//
//	go test -run '^$' -bench ReadinessPropagation -benchtime 200x ./gate/readiness/
func BenchmarkReadinessPropagation(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	host, port := splitHostPort(b, addr)
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		a := New([]Container{{Name: "app", Probe: tcpProbe(port, 0), Serving: true}},
			Options{Target: probe.Target{PodIP: host}, UserPort: port})
		ctx, cancel := context.WithCancel(context.Background())
		wait := a.Start(ctx)
		// Let the prober reach its steady backoff, as for a container
		// that takes a while to start.
		time.Sleep(20*time.Millisecond + time.Duration(rand.Int64N(int64(20*time.Millisecond))))
		b.StartTimer()
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for !a.Ready() {
			time.Sleep(20 * time.Microsecond)
		}
		lat = append(lat, time.Since(start))
		b.StopTimer()
		cancel()
		wait()
		ln.Close()
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

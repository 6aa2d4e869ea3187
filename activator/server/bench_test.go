package server

import (
	"context"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkThroughput measures requests on this machine, on keep-alive
// connections from 8×GOMAXPROCS clients, over three paths to the test
// app of the shared cluster's pods: straight to one pod's app, to one
// pod's gate (which proxies to its app), and through the activator (which
// balances over both pods' gates). Client, activator, gates and apps share
// the machine's cores, so the figures compare paths, not capacities.
// Reported: ns/op (req/s = 1e9 / ns/op across all clients) and p99-µs.
//
//	go test -run '^$' -bench BenchmarkThroughput -benchtime 5s ./activator/server/
func BenchmarkThroughput(b *testing.B) {
	e := sharedEnv(b)
	p, err := e.cs.CoreV1().Pods(testNS).Get(context.Background(), "web-a", metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ip := p.Status.PodIP
	b.Run("direct-to-app", func(b *testing.B) { benchGet(b, "http://"+ip+":8080/", "") })
	b.Run("direct-to-gate", func(b *testing.B) { benchGet(b, "http://"+ip+":8012/", host) })
	b.Run("activator", func(b *testing.B) { benchGet(b, "http://"+e.act.Addr().String()+"/", host) })
}

// benchGet sends GETs for host to url from 8×GOMAXPROCS clients and
// reports the p99.
func benchGet(b *testing.B, url, host string) {
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1024}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var (
		mu  sync.Mutex
		all []time.Duration
	)
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var lat []time.Duration
		for pb.Next() {
			req, err := http.NewRequest(http.MethodGet, url, nil)
			if err != nil {
				b.Error(err)
				return
			}
			if host != "" {
				req.Host = host
			}
			start := time.Now()
			resp, err := client.Do(req)
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
	if len(all) > 0 {
		slices.Sort(all)
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
	}
}

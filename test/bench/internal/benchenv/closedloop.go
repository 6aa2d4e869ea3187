package benchenv

import (
	"context"
	"slices"
	"time"

	"github.com/podgate/podgate/lab/load"
)

// Path is one path's throughput figures, over every round added.
type Path struct {
	Name     string
	OK, Fail int
	Window   time.Duration
	lat      []time.Duration // of the 2xx responses
	sorted   bool
}

// Add counts a round's recording, measured over window.
func (p *Path) Add(rec *load.Recording, window time.Duration) {
	p.Window += window
	for _, q := range rec.Requests {
		if q.OK() {
			p.OK++
			p.lat = append(p.lat, q.Duration)
		} else {
			p.Fail++
		}
	}
	p.sorted = false
}

// Rate is the requests per second, answered or failed.
func (p *Path) Rate() float64 {
	if p.Window <= 0 {
		return 0
	}
	return float64(p.OK+p.Fail) / p.Window.Seconds()
}

// Pct is the q-quantile (0.5, 0.99) of the 2xx responses' latency.
func (p *Path) Pct(q float64) time.Duration {
	if len(p.lat) == 0 {
		return 0
	}
	if !p.sorted {
		slices.Sort(p.lat)
		p.sorted = true
	}
	return p.lat[int(q*float64(len(p.lat)-1))]
}

// ClosedLoop sends GET url with Host host as fast as conns keep-alive
// connections allow, for d (or until ctx ends), and returns the
// recording and how long it ran.
func ClosedLoop(ctx context.Context, url, host string, conns int, d time.Duration) (*load.Recording, time.Duration, error) {
	gen, err := load.Start(load.Config{URL: url, Host: host, Workers: conns, Rate: 1e9, Timeout: 30 * time.Second})
	if err != nil {
		return nil, 0, err
	}
	start := time.Now()
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec := gen.Stop(stopCtx)
	return rec, time.Since(start), ctx.Err()
}

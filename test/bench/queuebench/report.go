package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

type loadMode int

const (
	closed loadMode = iota // closed loop, as fast as the path answers
	fixed                  // the same offered rate for every path
)

type sampleKey struct {
	kind  pathKind
	place placement
	mode  loadMode
}

// results are every sample of the run, by path, placement and load.
type results struct {
	conns   int
	rate    [numPlacements]float64 // the equal load of each placement
	titles  [numPlacements]string
	samples map[sampleKey][]sample
	door    *doorResult
}

func (r *results) add(k pathKind, pl placement, m loadMode, s sample) {
	if r.samples == nil {
		r.samples = map[sampleKey][]sample{}
	}
	key := sampleKey{k, pl, m}
	r.samples[key] = append(r.samples[key], s)
}

// agg is the samples of one key taken together: rates and CPU over all
// requests, latency percentiles as the median of the runs', memory as
// the largest seen.
type agg struct {
	n                int
	rate             float64
	cpuPerRequest    float64 // µs
	p50, p99         time.Duration
	idleRSS, loadRSS int64
}

func (r *results) get(k pathKind, pl placement, m loadMode) agg {
	ss := r.samples[sampleKey{k, pl, m}]
	var a agg
	var requests int64
	var window, cpu time.Duration
	var p50s, p99s []time.Duration
	for _, s := range ss {
		requests += s.wrk.requests
		window += s.wrk.window
		cpu += s.cpu
		p50s, p99s = append(p50s, s.wrk.p50), append(p99s, s.wrk.p99)
		a.idleRSS, a.loadRSS = max(a.idleRSS, s.idleRSS), max(a.loadRSS, s.loadRSS)
	}
	a.n = len(ss)
	if window > 0 {
		a.rate = float64(requests) / window.Seconds()
	}
	if requests > 0 {
		a.cpuPerRequest = float64(cpu.Microseconds()) / float64(requests)
	}
	a.p50, a.p99 = median(p50s), median(p99s)
	return a
}

// capacity is a path's closed-loop rate.
func (r *results) capacity(k pathKind, pl placement) float64 {
	return r.get(k, pl, closed).rate
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	if n := len(ds); n%2 == 0 {
		return (ds[n/2-1] + ds[n/2]) / 2
	}
	return ds[len(ds)/2]
}

// row is one line of the table: a figure for every path, the gate's
// ratio to queue-proxy and the goal it is held to.
type row struct {
	name  string
	cells [numPaths]string
	ratio float64 // gate / queue-proxy; 0: none
	goal  string
	met   bool
}

func (r *results) print(w io.Writer) {
	fmt.Fprintf(w, "== the gate against Knative's queue-proxy (same environment, upstream and run) ==\n")
	for pl := range numPlacements {
		if len(r.samples[sampleKey{gateProxy, pl, closed}]) == 0 {
			continue
		}
		fmt.Fprintf(w, "-- %s --\n", r.titles[pl])
		printRows(w, r.rows(pl))
	}
	d, g := r.get(direct, sharedCores, fixed), r.get(gateProxy, sharedCores, fixed)
	fmt.Fprintf(w, "\nthe gate's overhead over a direct connection: %.1f µs of CPU per request (its own process); at %.0f req/s p50 %+.3f ms, p99 %+.3f ms\n",
		r.get(gateProxy, sharedCores, closed).cpuPerRequest, r.rate[sharedCores], msf(g.p50-d.p50), msf(g.p99-d.p99))
	if r.door != nil {
		r.door.print(w)
	}
}

func (r *results) rows(pl placement) []row {
	c := func(k pathKind) agg { return r.get(k, pl, closed) }
	f := func(k pathKind) agg { return r.get(k, pl, fixed) }
	rate := r.rate[pl]
	cells := func(v func(pathKind) string) (out [numPaths]string) {
		for k := range numPaths {
			if pl != sharedCores && k == direct {
				out[k] = "–"
				continue
			}
			out[k] = v(k)
		}
		return out
	}
	ratio := func(v func(agg) float64, get func(pathKind) agg) float64 {
		q := v(get(queueProxy))
		if q == 0 {
			return 0
		}
		return v(get(gateProxy)) / q
	}
	tp := ratio(func(a agg) float64 { return a.rate }, c)
	cpu := ratio(func(a agg) float64 { return a.cpuPerRequest }, c)
	p99 := ratio(func(a agg) float64 { return float64(a.p99) }, f)
	rows := []row{
		{name: fmt.Sprintf("throughput, %d conns (req/s)", r.conns), cells: cells(func(k pathKind) string { return fmt.Sprintf("%.0f", c(k).rate) }),
			ratio: tp, goal: "≥ 2", met: tp >= 2},
		{name: "CPU per request (µs)", cells: cells(func(k pathKind) string { return fmt.Sprintf("%.1f", c(k).cpuPerRequest) }),
			ratio: cpu, goal: "≤ 0.5", met: cpu > 0 && cpu <= 0.5},
		{name: fmt.Sprintf("p50 at %.0f req/s (ms)", rate), cells: cells(func(k pathKind) string { return fmt.Sprintf("%.3f", msf(f(k).p50)) }),
			ratio: ratio(func(a agg) float64 { return float64(a.p50) }, f)},
		{name: fmt.Sprintf("p99 at %.0f req/s (ms)", rate), cells: cells(func(k pathKind) string { return fmt.Sprintf("%.3f", msf(f(k).p99)) }),
			ratio: p99, goal: "≤ 0.5", met: p99 > 0 && p99 <= 0.5},
	}
	if pl == sharedCores {
		idle := ratio(func(a agg) float64 { return float64(a.idleRSS) }, c)
		load := ratio(func(a agg) float64 { return float64(a.loadRSS) }, c)
		rows = append(rows,
			row{name: "RSS idle (MB)", cells: cells(func(k pathKind) string { return mbf(c(k).idleRSS) }), ratio: idle,
				goal: "gate ≤ 16 MB", met: c(gateProxy).idleRSS <= 16e6},
			row{name: "RSS after load (MB)", cells: cells(func(k pathKind) string { return mbf(c(k).loadRSS) }), ratio: load,
				goal: "gate ≤ 16 MB", met: c(gateProxy).loadRSS <= 16e6})
	}
	return rows
}

func printRows(w io.Writer, rows []row) {
	fmt.Fprintf(w, "  %-30s", "")
	for k := range numPaths {
		fmt.Fprintf(w, " %12s", k)
	}
	fmt.Fprintf(w, " %12s  %s\n", "gate / q-p", "goal")
	for _, r := range rows {
		fmt.Fprintf(w, "  %-30s", r.name)
		for _, c := range r.cells {
			fmt.Fprintf(w, " %12s", c)
		}
		ratio := "–"
		if r.ratio > 0 {
			ratio = fmt.Sprintf("%.2f", r.ratio)
		}
		verdict := ""
		if r.goal != "" {
			verdict = r.goal + map[bool]string{true: "  met", false: "  NOT MET"}[r.met]
		}
		fmt.Fprintf(w, " %12s  %s\n", ratio, strings.TrimSpace(verdict))
	}
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mbf(b int64) string { return fmt.Sprintf("%.1f", float64(b)/1e6) }

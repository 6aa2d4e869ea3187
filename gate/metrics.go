package gate

import (
	"bufio"
	"fmt"
	"math"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/podgate/podgate/probe"
)

// Metrics are the gate's Prometheus metrics, written in the text
// exposition format (version 0.0.4) by a few lines of our own: the hot
// path is a handful of atomic adds, and the gate needs no metrics library.
type Metrics struct {
	codes    [600]atomic.Uint64 // requests by status code
	latency  histogram
	holds    atomic.Uint64
	retries  atomic.Uint64
	held     atomic.Int64
	upstream atomic.Uint64 // upstream errors after the request was sent (502)

	inFlight   func() int64
	queueDepth func() int64
	ready      func() bool

	mu         sync.Mutex
	containers map[string]bool
	probes     map[probeKey]uint64
}

type probeKey struct{ container, kind, result string }

// latencyBounds are the request duration buckets, in seconds.
var latencyBounds = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

func newMetrics() *Metrics {
	return &Metrics{
		latency:    newHistogram(latencyBounds),
		containers: map[string]bool{},
		probes:     map[probeKey]uint64{},
		inFlight:   func() int64 { return 0 },
		queueDepth: func() int64 { return 0 },
		ready:      func() bool { return false },
	}
}

// request records one proxied request.
func (m *Metrics) request(code int, d time.Duration) {
	if code < 0 || code >= len(m.codes) {
		code = 0
	}
	m.codes[code].Add(1)
	m.latency.observe(d.Seconds())
}

func (m *Metrics) containerReady(name string, ready bool) {
	m.mu.Lock()
	m.containers[name] = ready
	m.mu.Unlock()
}

func (m *Metrics) probeResult(container, kind string, r probe.Result) {
	m.mu.Lock()
	m.probes[probeKey{container, kind, r.String()}]++
	m.mu.Unlock()
}

// ServeHTTP writes the metrics.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	bw := bufio.NewWriter(w)
	m.write(bw)
	_ = bw.Flush()
}

func (m *Metrics) write(w *bufio.Writer) {
	family := func(name, typ, help string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	sample := func(name, labels string, v float64) {
		w.WriteString(name)
		if labels != "" {
			w.WriteString("{" + labels + "}")
		}
		w.WriteByte(' ')
		w.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		w.WriteByte('\n')
	}

	family("podgate_requests_total", "counter", "Requests proxied to the serving container, by response status code (health checks excluded).")
	for code := range m.codes {
		if n := m.codes[code].Load(); n > 0 {
			sample("podgate_requests_total", `code="`+strconv.Itoa(code)+`"`, float64(n))
		}
	}
	family("podgate_request_duration_seconds", "histogram", "Time from a request's arrival to the end of its response.")
	m.latency.write(w, "podgate_request_duration_seconds")
	family("podgate_requests_in_flight", "gauge", "Requests arrived and not yet answered.")
	sample("podgate_requests_in_flight", "", float64(m.inFlight()))
	family("podgate_queue_depth", "gauge", "Requests waiting for a CONTAINER_CONCURRENCY slot.")
	sample("podgate_queue_depth", "", float64(m.queueDepth()))
	family("podgate_ridethrough_holds_total", "counter", "Requests held because the serving container refused the connection.")
	sample("podgate_ridethrough_holds_total", "", float64(m.holds.Load()))
	family("podgate_ridethrough_retries_total", "counter", "Connection attempts repeated for held requests.")
	sample("podgate_ridethrough_retries_total", "", float64(m.retries.Load()))
	family("podgate_ridethrough_held", "gauge", "Requests held right now.")
	sample("podgate_ridethrough_held", "", float64(m.held.Load()))
	family("podgate_upstream_errors_total", "counter", "Requests that failed after reaching the serving container (not replayed).")
	sample("podgate_upstream_errors_total", "", float64(m.upstream.Load()))
	family("podgate_ready", "gauge", "1 when the gate answers health checks with ready.")
	sample("podgate_ready", "", b2f(m.ready()))

	m.mu.Lock()
	names := make([]string, 0, len(m.containers))
	for n := range m.containers {
		names = append(names, n)
	}
	slices.Sort(names)
	ready := make([]bool, len(names))
	for i, n := range names {
		ready[i] = m.containers[n]
	}
	keys := make([]probeKey, 0, len(m.probes))
	for k := range m.probes {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b probeKey) int {
		return strings.Compare(a.container+"\xff"+a.kind+"\xff"+a.result, b.container+"\xff"+b.kind+"\xff"+b.result)
	})
	counts := make([]uint64, len(keys))
	for i, k := range keys {
		counts[i] = m.probes[k]
	}
	m.mu.Unlock()

	family("podgate_container_ready", "gauge", "1 when the container counts as ready.")
	for i, n := range names {
		sample("podgate_container_ready", `container="`+escapeLabel(n)+`"`, b2f(ready[i]))
	}
	family("podgate_probe_results_total", "counter", "Probe attempts run by the gate, by container, kind and result.")
	for i, k := range keys {
		sample("podgate_probe_results_total",
			`container="`+escapeLabel(k.container)+`",kind="`+k.kind+`",result="`+k.result+`"`, float64(counts[i]))
	}

	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	family("go_goroutines", "gauge", "Number of goroutines.")
	sample("go_goroutines", "", float64(runtime.NumGoroutine()))
	family("go_memstats_heap_inuse_bytes", "gauge", "Bytes in in-use heap spans.")
	sample("go_memstats_heap_inuse_bytes", "", float64(ms.HeapInuse))
	if rss, ok := residentBytes(); ok {
		family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.")
		sample("process_resident_memory_bytes", "", float64(rss))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// residentBytes reads the RSS from /proc (Linux); false elsewhere.
func residentBytes() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * uint64(os.Getpagesize()), true
}

// histogram is a Prometheus histogram with fixed bounds.
type histogram struct {
	bounds []float64
	counts []atomic.Uint64 // per bucket, not cumulative; last is +Inf
	sum    atomic.Uint64   // float64 bits
}

func newHistogram(bounds []float64) histogram {
	return histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i, _ := slices.BinarySearch(h.bounds, v)
	h.counts[i].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

func (h *histogram) write(w *bufio.Writer, name string) {
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i].Load()
		fmt.Fprintf(w, "%s_bucket{le=\"%s\"} %d\n", name, strconv.FormatFloat(b, 'g', -1, 64), cum)
	}
	cum += h.counts[len(h.bounds)].Load()
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n", name, cum)
	fmt.Fprintf(w, "%s_sum %s\n", name, strconv.FormatFloat(math.Float64frombits(h.sum.Load()), 'g', -1, 64))
	fmt.Fprintf(w, "%s_count %d\n", name, cum)
}

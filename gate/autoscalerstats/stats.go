package autoscalerstats

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
	"k8s.io/utils/clock"
)

// Wire constants of the autoscaler's scrape (knative.dev/serving v0.50.0).
const (
	// Port is queue-proxy's AutoscalingQueueMetricsPort: the autoscaler
	// scrapes http://POD_IP:9090/metrics.
	Port = 9090
	// Path is the only path served.
	Path = "/metrics"
	// ContentType is what the answer carries and what the autoscaler
	// accepts (anything else is "unsupported metric type" to it).
	ContentType = "application/protobuf"
	// ReportingPeriod is how often queue-proxy computes a Stat.
	ReportingPeriod = time.Second
	// ProxyHeader and ProxyActivator mark a request the activator sent:
	// it counts as proxied.
	ProxyHeader    = "K-Proxy-Request"
	ProxyActivator = "activator"
)

// Window is the time-weighted request statistics of one reporting period:
// every arrival and end moves the concurrency, and the concurrency is
// integrated over time between them.
type Window struct {
	mu sync.Mutex

	concurrency, proxiedConcurrency int64
	lastChange                      time.Time

	requests, proxied   int64
	integral, proxiedIn float64 // concurrency × seconds
	seconds             float64 // length of the window so far
}

// Report is one period's statistics.
type Report struct {
	AverageConcurrency        float64
	AverageProxiedConcurrency float64
	RequestCount              float64
	ProxiedRequestCount       float64
}

// NewWindow starts the first window at start.
func NewWindow(start time.Time) *Window { return &Window{lastChange: start} }

// advance integrates the concurrency up to now. A time before the last
// change (clocks of two goroutines read in the other order) counts as no
// time at all, as in queue-proxy.
func (w *Window) advance(now time.Time) {
	if d := now.Sub(w.lastChange); d > 0 {
		s := d.Seconds()
		w.seconds += s
		w.integral += float64(w.concurrency) * s
		w.proxiedIn += float64(w.proxiedConcurrency) * s
		w.lastChange = now
	}
}

// In notes a request's arrival at now.
func (w *Window) In(now time.Time, proxied bool) {
	w.mu.Lock()
	w.advance(now)
	w.requests++
	w.concurrency++
	if proxied {
		w.proxied++
		w.proxiedConcurrency++
	}
	w.mu.Unlock()
}

// Out notes the end of a request that arrived with In(…, proxied).
func (w *Window) Out(now time.Time, proxied bool) {
	w.mu.Lock()
	w.advance(now)
	w.concurrency--
	if proxied {
		w.proxiedConcurrency--
	}
	w.mu.Unlock()
}

// Report closes the window at now and starts the next: the averages over
// the window and the requests that arrived in it. Requests in flight
// carry their concurrency into the next window.
func (w *Window) Report(now time.Time) Report {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advance(now)
	r := Report{RequestCount: float64(w.requests), ProxiedRequestCount: float64(w.proxied)}
	if w.seconds > 0 {
		r.AverageConcurrency = w.integral / w.seconds
		r.AverageProxiedConcurrency = w.proxiedIn / w.seconds
	}
	w.requests, w.proxied = 0, 0
	w.integral, w.proxiedIn, w.seconds = 0, 0, 0
	return r
}

// Reporter turns a Window into the Stat the autoscaler scrapes, once per
// period, and serves it.
type Reporter struct {
	*Window
	pod    string
	start  time.Time
	period time.Duration
	clock  clock.Clock
	body   atomic.Pointer[[]byte] // the marshalled Stat, served as is
}

// NewReporter counts requests from now (the gate's start, whence the
// uptime) for the pod named pod.
func NewReporter(clk clock.Clock, pod string) *Reporter {
	now := clk.Now()
	r := &Reporter{Window: NewWindow(now), pod: pod, start: now, period: ReportingPeriod, clock: clk}
	r.store(&Stat{PodName: pod})
	return r
}

func (r *Reporter) store(s *Stat) {
	b, err := proto.Marshal(s)
	if err != nil { // a Stat of strings and numbers always marshals
		panic(fmt.Sprintf("autoscalerstats: marshal Stat: %v", err))
	}
	r.body.Store(&b)
}

// report computes the period that ends at now.
func (r *Reporter) report(now time.Time) {
	rep := r.Report(now)
	secs := r.period.Seconds()
	r.store(&Stat{
		PodName:                          r.pod,
		ProcessUptime:                    now.Sub(r.start).Seconds(),
		RequestCount:                     rep.RequestCount / secs,
		ProxiedRequestCount:              rep.ProxiedRequestCount / secs,
		AverageConcurrentRequests:        rep.AverageConcurrency,
		AverageProxiedConcurrentRequests: rep.AverageProxiedConcurrency,
	})
}

// Run reports once per period until ctx ends. The reports keep to a
// fixed grid from the start, as a ticker's do (queue-proxy's is a
// time.Ticker): a late report does not push the next ones back, and
// periods missed altogether are dropped, the next report covering them.
func (r *Reporter) Run(ctx context.Context) {
	next := r.start.Add(r.period)
	for {
		now := r.clock.Now()
		if wait := next.Sub(now); wait > 0 {
			t := r.clock.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case now = <-t.C():
			}
		} else if ctx.Err() != nil { // already due (this goroutine started late)
			return
		}
		r.report(now)
		for !next.After(now) {
			next = next.Add(r.period)
		}
	}
}

// Current is the Stat as the autoscaler would read it now.
func (r *Reporter) Current() *Stat {
	var s Stat
	if err := proto.Unmarshal(*r.body.Load(), &s); err != nil {
		panic(fmt.Sprintf("autoscalerstats: unmarshal own Stat: %v", err))
	}
	return &s
}

// Handler serves the Stat on Path (any method, any Accept) and 404 on any
// other path, as queue-proxy's autoscaler port does.
func (r *Reporter) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(Path, http.HandlerFunc(r.serve))
	return mux
}

func (r *Reporter) serve(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", ContentType)
	_, _ = w.Write(*r.body.Load())
}

// Proxied reports whether the activator sent r (K-Proxy-Request:
// activator, the value compared exactly, as queue-proxy does).
func Proxied(r *http.Request) bool { return r.Header.Get(ProxyHeader) == ProxyActivator }

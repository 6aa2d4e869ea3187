package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/podgate/podgate/internal/knativebin"
	"github.com/podgate/podgate/test/bench/internal/benchenv"
	"github.com/podgate/podgate/test/queueenv"
	"golang.org/x/sys/unix"
)

// The addresses inside the benchmark's network namespace: Knative's own
// ports, the pod's address 127.0.0.1.
const (
	podIP         = "127.0.0.1"
	userPort      = 8080 // the upstream (USER_PORT)
	servingPort   = queueenv.ServingPort
	statsPort     = queueenv.AutoscalerPort
	requestsAfter = time.Second // a proxy's idle RSS is read this long after its first answer
	startWait     = 30 * time.Second
)

// pathKind is one way the load reaches the upstream.
type pathKind int

const (
	direct pathKind = iota
	tunedProxy
	queueProxy
	gateProxy
	numPaths
)

func (k pathKind) String() string {
	return [...]string{"direct", "tuned proxy", "queue-proxy", "gate"}[k]
}

// metricsOn is OBSERVABILITY_CONFIG with Knative's Prometheus exporters
// switched on: queue-proxy then keeps its request metrics (the gate
// always does), so both do the same work per request.
const metricsOn = `{"tracing":{"protocol":"none"},"metrics":{"protocol":"prometheus"},"runtime":{"profiling":"disabled","exportInterval":15000000000},"requestMetrics":{"protocol":"prometheus"}}`

type bench struct {
	o        options
	wrk      string
	dir      string
	self     string
	gate     string // podgate-gate
	queue    string // Knative's queue-proxy
	podgate  string // for the front door
	upstream *proc
	env      []string // Knative's queue container environment
	starts   int
	profiled map[profiledKey]bool
	// The ownCore runs: the proxy's CPU, and the others for wrk and the
	// upstream.
	proxyCPU  int
	otherCPUs unix.CPUSet
}

func newBench(ctx context.Context, o options, wrk string) (_ *bench, err error) {
	b := &bench{o: o, wrk: wrk, profiled: map[profiledKey]bool{}}
	if b.dir, err = os.MkdirTemp("", "queuebench-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			b.close()
		}
	}()
	if b.self, err = os.Executable(); err != nil {
		return nil, err
	}
	if b.gate = o.gate; b.gate == "" {
		if b.gate, err = benchenv.BuildGate(ctx, b.dir); err != nil {
			return nil, err
		}
	}
	if b.podgate = o.podgate; b.podgate == "" && (o.door || o.onlyDoor) {
		if b.podgate, err = benchenv.BuildPodgate(ctx, b.dir); err != nil {
			return nil, err
		}
	}
	// Built by hack/knative-build.sh from the version the cluster installs
	// (a cache hit after the first time).
	if b.queue, err = knativebin.Path(knativebin.Queue); err != nil {
		return nil, fmt.Errorf("building queue-proxy (Knative's): %w", err)
	}
	rev := queueenv.Revision{
		Namespace: "default", Service: "hello", Configuration: "hello", Revision: "hello-00001",
		Pod: "hello-00001-deployment-5d8f-q2x7c", PodIP: podIP, HostIP: podIP,
		UserPort: userPort, ObservabilityConfig: metricsOn,
	}
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return nil, err
		}
		rev.ObservabilityConfig = strings.Replace(metricsOn, `"profiling":"disabled"`, `"profiling":"enabled"`, 1)
	}
	b.env = append(os.Environ(), rev.Env()...)
	b.env = append(b.env, "PODGATE_DRAIN_QUIET_PERIOD=0s")
	b.env = append(b.env, o.proxyEnv...)
	addr := net.JoinHostPort(podIP, strconv.Itoa(userPort))
	if o.ownCore {
		if b.proxyCPU, b.otherCPUs, err = splitCPUs(); err != nil {
			return nil, err
		}
	}
	if b.upstream, err = b.start("upstream", sharedCores, nil, b.self, roleUpstream, addr); err != nil {
		return nil, err
	}
	if err := b.upstream.waitOK(ctx, "http://"+addr+"/"); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *bench) header() {
	m := benchenv.ReadMachine()
	fmt.Printf("queuebench  %s\n", time.Now().Format("2006-01-02 15:04:05 MST"))
	fmt.Printf("machine     %s\n", m)
	fmt.Printf("load avg    %s (at start)\n", m.Loadavg)
	fmt.Printf("queue-proxy %s (Knative Serving v0.50.0)\n", b.queue)
	fmt.Printf("gate        %s\n", b.gate)
	fmt.Printf("load        %s, in a network namespace of its own\n\n", b.wrk)
}

func (b *bench) close() {
	if b.upstream != nil {
		b.upstream.stop()
	}
	if b.o.keep {
		fmt.Println("kept", b.dir)
		return
	}
	_ = os.RemoveAll(b.dir)
}

// startPath starts the proxy of kind k, placed as pl says, and waits
// until it answers through to the upstream. Direct has no process of its
// own: the upstream's is returned, not started.
func (b *bench) startPath(ctx context.Context, k pathKind, pl placement) (*proc, string, error) {
	url := fmt.Sprintf("http://%s:%d/", podIP, servingPort)
	var p *proc
	var err error
	switch k {
	case direct:
		return b.upstream, fmt.Sprintf("http://%s:%d/", podIP, userPort), nil
	case tunedProxy:
		var env []string
		if b.o.profile != "" {
			env = append(os.Environ(), profileEnv+"=1")
		}
		p, err = b.start("tuned-proxy", pl, env, b.self, roleProxy,
			net.JoinHostPort(podIP, strconv.Itoa(servingPort)), net.JoinHostPort(podIP, strconv.Itoa(userPort)), strconv.Itoa(b.o.conns))
	case queueProxy:
		p, err = b.start("queue-proxy", pl, b.env, b.queue)
	case gateProxy:
		p, err = b.start("gate", pl, append(b.env[:len(b.env):len(b.env)], b.o.gateEnv...), b.gate)
	}
	if err != nil {
		return nil, "", err
	}
	if err := p.waitOK(ctx, url); err != nil {
		p.stop()
		return nil, "", err
	}
	return p, url, nil
}

// scrapeStats scrapes the autoscaler's statistics every second, as
// Knative's autoscaler does, until stop is closed.
func scrapeStats(stop <-chan struct{}) {
	client := &http.Client{Timeout: time.Second}
	url := fmt.Sprintf("http://%s:%d/metrics", podIP, statsPort)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Accept", "application/protobuf")
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
		}
	}
}

// measure runs w against k (a process started for this run) and returns
// what wrk saw with the proxy's CPU and memory.
func (b *bench) measure(ctx context.Context, k pathKind, pl placement, w wrkRun) (sample, error) {
	p, url, err := b.startPath(ctx, k, pl)
	if err != nil {
		return sample{}, fmt.Errorf("%s: %w", k, err)
	}
	if k != direct {
		defer p.stop()
	}
	time.Sleep(requestsAfter)
	s := sample{idleRSS: p.rss()}
	stop := make(chan struct{})
	if k == queueProxy || k == gateProxy {
		go scrapeStats(stop)
	}
	defer close(stop)
	// A second of warm-up: connections made, pools and buffers grown.
	warm := w
	warm.duration = time.Second
	if _, err := warm.run(ctx, b.wrk, b.dir, url); err != nil {
		return sample{}, fmt.Errorf("%s: %w", k, err)
	}
	profiled := b.profileRun(k, pl, w)
	cpu0 := p.cpu()
	if s.wrk, err = w.run(ctx, b.wrk, b.dir, url); err != nil {
		return sample{}, fmt.Errorf("%s: %w", k, err)
	}
	if err := profiled(); err != nil {
		return sample{}, fmt.Errorf("%s: profile: %w", k, err)
	}
	s.cpu = p.cpu() - cpu0
	s.loadRSS = p.rss()
	if s.wrk.bad > 0 {
		return s, fmt.Errorf("%s: %d requests failed (non-2xx answers or socket errors); logs in %s", k, s.wrk.bad, b.dir)
	}
	return s, nil
}

// closedLoop measures every path at -conns connections, -rounds times,
// the paths interleaved. Direct has no proxy to place: it runs only with
// every process on every core.
func (b *bench) closedLoop(ctx context.Context, r *results, pl placement) error {
	w := wrkRun{conns: b.o.conns, duration: b.o.duration}
	for round := 1; round <= b.o.rounds; round++ {
		for k := range numPaths {
			if pl != sharedCores && k == direct {
				continue // nothing to place
			}
			s, err := b.measure(ctx, k, pl, w)
			if err != nil {
				return err
			}
			r.add(k, pl, closed, s)
			fmt.Printf("  round %d  %-12s %9.0f req/s  p50 %s  p99 %s  CPU %6.1f µs/req  RSS %s → %s\n",
				round, k, s.wrk.rate(), ms(s.wrk.p50), ms(s.wrk.p99), s.cpuPerRequest(), mb(s.idleRSS), mb(s.loadRSS))
		}
	}
	return nil
}

// fixedRate measures every path at the same offered rate.
func (b *bench) fixedRate(ctx context.Context, r *results, pl placement, rate float64) error {
	w := fixedRateRun(rate, b.o.duration)
	for round := 1; round <= b.o.rounds; round++ {
		for k := range numPaths {
			if pl != sharedCores && k == direct {
				continue
			}
			s, err := b.measure(ctx, k, pl, w)
			if err != nil {
				return err
			}
			r.add(k, pl, fixed, s)
			fmt.Printf("  round %d  %-12s %9.0f req/s  p50 %s  p99 %s  CPU %6.1f µs/req\n",
				round, k, s.wrk.rate(), ms(s.wrk.p50), ms(s.wrk.p99), s.cpuPerRequest())
		}
	}
	return nil
}

// sample is one measured run.
type sample struct {
	wrk              wrkResult
	cpu              time.Duration // the proxy's (direct: the upstream's)
	idleRSS, loadRSS int64         // bytes
}

func (s sample) cpuPerRequest() float64 {
	return float64(s.cpu.Microseconds()) / float64(max(s.wrk.requests, 1))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }

func loadavg() string { return benchenv.ReadLoadavg() }

// logPath names the log file of the n-th process started.
func (b *bench) logPath(name string) string {
	b.starts++
	return filepath.Join(b.dir, fmt.Sprintf("%03d-%s.log", b.starts, name))
}

var errNoAnswer = errors.New("no 200 answer")

type profiledKey struct {
	k  pathKind
	pl placement
}

// profileEnv switches the tuned proxy's profiling port on.
const profileEnv = "QUEUEBENCH_PROFILE"

// profilingPort is where queue-proxy, the gate and the tuned proxy serve
// Go's profiles when profiling is on (Knative's 8008).
const profilingPort = queueenv.ProfilingPort

// profileRun starts a CPU profile of the proxy for the run about to start,
// the first closed-loop run of each proxy in each placement, when
// -profile is set; the returned function waits for it and writes it.
func (b *bench) profileRun(k pathKind, pl placement, w wrkRun) func() error {
	name := strings.ReplaceAll(k.String(), " ", "-") + [...]string{"", "-own-core", "-limited"}[pl] + ".cpu.pprof"
	path := filepath.Join(b.o.profile, name)
	if b.o.profile == "" || k == direct || w.delayMS > 0 || b.profiled[profiledKey{k, pl}] {
		return func() error { return nil }
	}
	b.profiled[profiledKey{k, pl}] = true
	done := make(chan error, 1)
	go func() {
		secs := max(1, int(w.duration.Seconds())-1)
		url := fmt.Sprintf("http://%s:%d/debug/pprof/profile?seconds=%d", podIP, profilingPort, secs)
		resp, err := (&http.Client{Timeout: w.duration + 30*time.Second}).Get(url)
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s: %s", url, resp.Status)
		}
		if err == nil {
			err = os.WriteFile(path, body, 0o644)
		}
		done <- err
	}()
	return func() error {
		if err := <-done; err != nil {
			return err
		}
		fmt.Printf("  profile of %s: %s\n", k, path)
		return nil
	}
}

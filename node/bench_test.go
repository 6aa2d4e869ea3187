package node

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podgate/podgate/probe"
)

// BenchmarkStartToFirstRequest measures a Knative Service with the test app
// from Agent.Start to the first 200 from its pod: the local equivalent of
// `podgate run -f examples/hello.yaml` to the first successful request,
// without the binary's own start and manifest loading. It also reports the
// median, as ms/median.
func BenchmarkStartToFirstRequest(b *testing.B) {
	var samples []time.Duration
	for i := 0; b.Loop(); i++ {
		h := newHarness(b)
		start := time.Now()
		h.start(fmt.Sprintf(`apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: hello%d}
spec:
  template:
    spec:
      containers:
      - image: ghcr.io/podgate/testapp
        ports: [{containerPort: 8080}]
`, i))
		ip := netip.MustParsePrefix(h.agent.opts.PodCIDR).Addr().Next().String()
		deadline := time.Now().Add(waitLimit)
		for {
			if code, _, err := get("http://" + ip + ":8080/"); err == nil && code == 200 {
				break
			}
			if time.Now().After(deadline) {
				b.Fatal("no successful request")
			}
			time.Sleep(time.Millisecond)
		}
		samples = append(samples, time.Since(start))
		b.StopTimer()
		h.stop()
		b.StartTimer()
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	b.ReportMetric(float64(samples[len(samples)/2].Microseconds())/1000, "ms/median")
}

var (
	agentCPUWindow  = flag.Duration("agentcpu.window", 10*time.Second, "BenchmarkAgentCPU: the measured window")
	agentCPUProfile = flag.String("agentcpu.cpuprofile", "", "BenchmarkAgentCPU: write a CPU profile of the measured window (steady state only) to this file, suffixed with the sub-benchmark")
	agentMemProfile = flag.String("agentcpu.memprofile", "", "BenchmarkAgentCPU: write the allocation profile at the window's start and end to this file, suffixed with the sub-benchmark and .start or .end (go tool pprof -diff_base START END: the window's allocations)")
)

// benchPods and benchPorts: 50 pods of two test app containers, each
// probed over HTTP every second: 100 probes/s (200 with liveness).
const benchPods = 50

var benchPorts = []int{8080, 8081}

// BenchmarkAgentCPU measures what probing costs the node agent in steady
// state: 50 pods of two test app containers, all Ready, probed over HTTP
// every second. What is counted is this process's CPU (getrusage
// RUSAGE_SELF over the window): the agent, its prober, the pods' status,
// the events, and the local control plane the harness runs beside it
// (the store, the EndpointSlice and workload controllers), i.e. all of
// `podgate run` but its API server and front door. The containers are
// processes of their own and are not counted; their CPU is reported
// apart, as app-%cpu. (On loopback the kernel does the receiving side's
// TCP work in the sender's system call, so part of the apps' kernel time
// for a probe is billed to the agent, and part of the agent's to the
// apps: the kubelet's probes over a veth pay the same way.)
//
// Sub-benchmarks:
//   - idle: the same pods without probes; nothing probes them.
//   - floor: the same pods without probes, 100 plain workers (a
//     goroutine and a ticker each, the two of a pod in step, as the
//     agent's are) doing the least a fresh-connection HTTP probe can:
//     connect, write the request, read to EOF, close (floorTicks).
//   - bare: the same, each tick probe.Runner.Run (one shared Runner, as
//     test/bench/probeload): the kubelet-exact probe attempt itself at
//     this rate.
//   - readiness: the agent probes (readiness only: 100 probes/s).
//   - readiness+liveness: 200 probes/s.
//
// Each reports %cpu (of one core), cpu-µs/probe (this process's CPU over
// the probes made in the window), allocs/probe and B/probe (this
// process's, likewise), app-%cpu, and probes/s as counted.
func BenchmarkAgentCPU(b *testing.B) {
	for _, mode := range []string{"idle", "floor", "bare", "readiness", "readiness+liveness"} {
		b.Run(mode, func(b *testing.B) { benchAgentCPU(b, mode) })
	}
}

func benchAgentCPU(b *testing.B, mode string) {
	h := newHarness(b)
	var probes atomic.Int64
	if probed(mode) {
		bind := h.agent.bindProbe
		h.agent.bindProbe = func(spec *corev1.Probe, t probe.Target) func(context.Context) probe.Outcome {
			run := bind(spec, t)
			return func(ctx context.Context) probe.Outcome {
				o := run(ctx)
				probes.Add(1)
				return o
			}
		}
	}
	h.start(benchManifest(mode))
	waitBenchPods(b, h, mode)
	stopWorkers := func() {}
	switch mode {
	case "bare":
		stopWorkers = bareWorkers(b, h, &probes, runnerTicks())
	case "floor":
		stopWorkers = bareWorkers(b, h, &probes, floorTicks())
	}
	defer stopWorkers()
	// Settle: the start's burst of status writes and the first GCs.
	time.Sleep(2 * time.Second)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	for b.Loop() {
		stopProfile := startWindowProfile(b, mode)
		apps := childCPU()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		p0, before, wall := probes.Load(), cpuTime(), time.Now()
		time.Sleep(*agentCPUWindow)
		used, elapsed, n := cpuTime()-before, time.Since(wall), probes.Load()-p0
		runtime.ReadMemStats(&m1)
		appsUsed := childCPU().since(apps)
		stopProfile()
		b.ReportMetric(100*used.Seconds()/elapsed.Seconds(), "%cpu")
		b.ReportMetric(100*appsUsed.Seconds()/elapsed.Seconds(), "app-%cpu")
		b.ReportMetric(float64(n)/elapsed.Seconds(), "probes/s")
		if n > 0 {
			b.ReportMetric(float64(used.Microseconds())/float64(n), "cpu-µs/probe")
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(n), "allocs/probe")
			b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(n), "B/probe")
		}
	}
	b.ReportMetric(float64(ms.HeapInuse)/benchPods/1024, "KiB-heap/pod")
	b.StopTimer()
	stopWorkers()
	h.stop()
}

// probed: the agent probes the pods (else they have no probes).
func probed(mode string) bool { return mode == "readiness" || mode == "readiness+liveness" }

// benchManifest is the 50 pods, with probes when the agent probes.
func benchManifest(mode string) string {
	var sb strings.Builder
	for i := range benchPods {
		fmt.Fprintf(&sb, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p%d}\nspec:\n  containers:\n", i)
		for c, port := range benchPorts {
			fmt.Fprintf(&sb, "  - name: c%d\n    image: ghcr.io/podgate/testapp\n    args: [\"--port\", \"%d\"]\n", c, port)
			switch mode {
			case "readiness", "readiness+liveness":
				fmt.Fprintf(&sb, "    readinessProbe: {httpGet: {path: /readyz, port: %d}, periodSeconds: 1}\n", port)
			}
			if mode == "readiness+liveness" {
				fmt.Fprintf(&sb, "    livenessProbe: {httpGet: {path: /livez, port: %d}, periodSeconds: 1, failureThreshold: 60}\n", port)
			}
		}
	}
	return sb.String()
}

// waitBenchPods waits for every pod to be Ready and, without probes, for
// its test apps to answer.
func waitBenchPods(b *testing.B, h *harness, mode string) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		list, _ := h.store.Pods.List("default")
		ready := 0
		for _, p := range list {
			if podReady(p) && (probed(mode) || appsAnswer(p)) {
				ready++
			}
		}
		if ready == benchPods {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d pods ready", ready, benchPods)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// appsAnswer: both test apps of the pod answer /readyz.
func appsAnswer(p *corev1.Pod) bool {
	for _, port := range benchPorts {
		if code, _, err := get(fmt.Sprintf("http://%s:%d/readyz", p.Status.PodIP, port)); err != nil || code != 200 {
			return false
		}
	}
	return true
}

// bareWorkers probes every test app as the agent would, with plain
// workers: one goroutine and one ticker per container, each pod's
// started at a random point of the period, each tick made by the
// function tickOf gives for the container's address.
func bareWorkers(b *testing.B, h *harness, probes *atomic.Int64, tickOf func(ip string, port int) func(context.Context) bool) (stop func()) {
	b.Helper()
	list, _ := h.store.Pods.List("default")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var failed atomic.Int64
	for _, p := range list {
		// The containers of a pod start together, so the agent's (and the
		// kubelet's) workers of one pod tick together: so do these.
		phase := rand.N(time.Second)
		for _, port := range benchPorts {
			tick := tickOf(p.Status.PodIP, port)
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case <-time.After(phase):
				case <-ctx.Done():
					return
				}
				ticker := time.NewTicker(time.Second)
				defer ticker.Stop()
				for {
					if !tick(ctx) && ctx.Err() == nil {
						failed.Add(1)
					}
					probes.Add(1)
					select {
					case <-ticker.C:
					case <-ctx.Done():
						return
					}
				}
			}()
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			if n := failed.Load(); n > 0 {
				b.Errorf("%d bare probes did not succeed", n)
			}
		})
	}
}

// runnerTicks makes each tick with probe.Runner.Run, one Runner shared,
// as a plain caller of the probe package does (podgate probe, the gate).
func runnerTicks() func(ip string, port int) func(context.Context) bool {
	runner := probe.NewRunner()
	return func(ip string, port int) func(context.Context) bool {
		spec := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/readyz", Port: intstr.FromInt(port), Scheme: corev1.URISchemeHTTP,
		}}, TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
		target := probe.Target{PodIP: ip}
		return func(ctx context.Context) bool { return runner.Run(ctx, spec, target).Result == probe.Success }
	}
}

// floorTicks makes each tick the least a fresh-connection HTTP probe can
// be in Go: on the calling goroutine, dial (SO_LINGER as the kubelet's),
// write the request the kubelet writes, read the answer to EOF, close.
// No redirects, no header parsing, no timeout rules: not a probe, the
// floor under one (the kernel's TCP handshake, exchange and teardown
// and Go's netpoller).
func floorTicks() func(ip string, port int) func(context.Context) bool {
	d := &net.Dialer{KeepAlive: -1, Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) {
			_ = syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 1})
		})
	}}
	return func(ip string, port int) func(context.Context) bool {
		addr := net.JoinHostPort(ip, strconv.Itoa(port))
		req := []byte("GET /readyz HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: kube-probe/1.36\r\nAccept: */*\r\nConnection: close\r\n\r\n")
		buf := make([]byte, 1024)
		return func(ctx context.Context) bool {
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return false
			}
			defer func() { _ = c.Close() }()
			if _, err := c.Write(req); err != nil {
				return false
			}
			n, ok := 0, false
			for {
				m, err := c.Read(buf[n:])
				if !ok && n+m >= 12 {
					ok = string(buf[:12]) == "HTTP/1.1 200"
				}
				if n+m < 12 {
					n += m
				}
				if err != nil {
					return ok && err == io.EOF
				}
			}
		}
	}
}

// startWindowProfile starts the -agentcpu.cpuprofile profile and writes
// the first -agentcpu.memprofile, as asked; stop ends them.
func startWindowProfile(b *testing.B, mode string) (stop func()) {
	suffix := "." + strings.ReplaceAll(mode, "+", "-")
	writeHeap := func(end string) {
		if *agentMemProfile == "" {
			return
		}
		f, err := os.Create(*agentMemProfile + suffix + end)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = f.Close() }()
		runtime.GC() // the profile is as of the last GC
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			b.Fatal(err)
		}
	}
	writeHeap(".start")
	if *agentCPUProfile == "" {
		return func() { writeHeap(".end") }
	}
	f, err := os.Create(*agentCPUProfile + suffix)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close(); writeHeap(".end") }
}

// cpuTime is this process's user and system CPU time (children excluded).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is the user+system CPU of processes by pid.
type procCPU map[int]time.Duration

// since is the CPU the processes of before used since then (those still
// running).
func (now procCPU) since(before procCPU) time.Duration {
	var d time.Duration
	for pid, t := range before {
		if u, ok := now[pid]; ok {
			d += u - t
		}
	}
	return d
}

// childCPU reads /proc for this process's descendants (the containers
// and the process guardian) and their CPU so far.
func childCPU() procCPU {
	type stat struct {
		ppid int
		cpu  time.Duration
	}
	all := map[int]stat{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command's closing parenthesis: state ppid …;
		// utime and stime are the 12th and 13th of them, in clock ticks.
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		all[pid] = stat{ppid: ppid, cpu: time.Duration(ut+st) * 10 * time.Millisecond} // USER_HZ is 100
	}
	self := os.Getpid()
	out := procCPU{}
	for pid, s := range all {
		for p, hops := s.ppid, 0; p > 1 && hops < 8; p, hops = all[p].ppid, hops+1 {
			if p == self {
				out[pid] = s.cpu
				break
			}
		}
	}
	return out
}

// Command probeload measures what sustained HTTP probing costs the process
// that probes: N workers, each probing the test app's /readyz once per
// period like kubelet workers, for a fixed duration. The test app runs in a
// child process so that its CPU is not counted.
//
//	go run ./test/bench/probeload                  # 1,000 probes/s for 20 s
//	go run ./test/bench/probeload -workers 2000 -duration 30s
//
// It prints the achieved rate, the probing process's CPU as a percentage of
// one core (getrusage user+sys over the measured window), and latency
// percentiles.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podgate/podgate/probe"
	"github.com/podgate/podgate/test/testapp"
)

const childEnv = "PROBELOAD_TESTAPP"

func main() {
	if os.Getenv(childEnv) == "1" {
		serveTestApp()
		return
	}
	workers := flag.Int("workers", 1000, "probe workers, each probing once per period")
	period := flag.Duration("period", time.Second, "probe period of each worker")
	duration := flag.Duration("duration", 20*time.Second, "measured window")
	warmup := flag.Duration("warmup", 3*time.Second, "time before the window starts")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the measured window to this file")
	flag.Parse()
	profilePath = *cpuProfile

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *workers, *period, *warmup, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "probeload:", err)
		os.Exit(1)
	}
}

// serveTestApp is the child: the real test app on a free loopback port,
// announcing its address on stdout.
func serveTestApp() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := testapp.Start(testapp.Config{Addr: "127.0.0.1:0", Name: "probeload"}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(srv.Addr())
	if err := srv.ServeUntil(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func startChild() (*exec.Cmd, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, "", fmt.Errorf("test app did not announce its address: %w", err)
	}
	return cmd, line[:len(line)-1], nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func run(ctx context.Context, workers int, period, warmup, window time.Duration) error {
	child, addr, err := startChild()
	if err != nil {
		return err
	}
	defer func() {
		_ = child.Process.Signal(syscall.SIGTERM)
		_ = child.Wait()
	}()
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("test app address %q: %w", addr, err)
	}
	port, _ := strconv.Atoi(portStr)

	p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: "/readyz", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP,
	}}, TimeoutSeconds: 1, PeriodSeconds: int32(period / time.Second), SuccessThreshold: 1, FailureThreshold: 3}
	target := probe.Target{PodIP: host, Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}

	runner := probe.NewRunner() // one, shared, as the kubelet's prober
	var t tally
	stopWorkers := startWorkers(ctx, workers, period, func(ctx context.Context) probe.Outcome {
		return runner.Run(ctx, p, target)
	}, &t)
	defer stopWorkers()

	fmt.Printf("probeload: %d workers x 1 probe / %s against %s (test app in pid %d), GOMAXPROCS=%d, %s\n",
		workers, period, addr, child.Process.Pid, runtime.GOMAXPROCS(0), runtime.Version())
	sleep(ctx, warmup)
	stopProfile, err := startProfile()
	if err != nil {
		return err
	}
	cpu0, wall0 := cpuTime(), time.Now()
	t.measuring.Store(true)
	sleep(ctx, window)
	t.measuring.Store(false)
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	stopProfile()
	stopWorkers()
	return t.report(cpu, wall)
}

// startWorkers runs n workers, each probing once per period, spread over
// the period as the kubelet's jitter spreads its workers, until stop.
func startWorkers(ctx context.Context, n int, period time.Duration, probeOnce func(context.Context) probe.Outcome, t *tally) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-time.After(rand.N(period)):
			case <-ctx.Done():
				return
			}
			tick := time.NewTicker(period)
			defer tick.Stop()
			for {
				t.record(probeOnce(ctx))
				select {
				case <-tick.C:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			wg.Wait()
		})
	}
}

// tally counts the probes of the measured window and their latencies.
type tally struct {
	measuring atomic.Bool
	probes    atomic.Int64
	failed    atomic.Int64
	mu        sync.Mutex
	latencies []time.Duration
}

// record counts one probe if the window is open.
func (t *tally) record(o probe.Outcome) {
	if !t.measuring.Load() {
		return
	}
	t.probes.Add(1)
	if o.Result != probe.Success {
		t.failed.Add(1)
	}
	t.mu.Lock()
	t.latencies = append(t.latencies, o.Duration)
	t.mu.Unlock()
}

// report prints the window's rate, CPU and latency percentiles; an error
// if any probe did not succeed.
func (t *tally) report(cpu, wall time.Duration) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	slices.Sort(t.latencies)
	pct := func(q float64) time.Duration {
		if len(t.latencies) == 0 {
			return 0
		}
		return t.latencies[int(q*float64(len(t.latencies)-1))]
	}
	n := t.probes.Load()
	fmt.Printf("window        %s\n", wall.Round(time.Millisecond))
	fmt.Printf("probes        %d (%.0f/s), not success: %d\n", n, float64(n)/wall.Seconds(), t.failed.Load())
	fmt.Printf("cpu           %s = %.2f%% of one core\n", cpu.Round(time.Millisecond), 100*cpu.Seconds()/wall.Seconds())
	fmt.Printf("cpu per probe %s\n", (cpu / time.Duration(max(n, 1))).Round(time.Microsecond/10))
	fmt.Printf("latency       p50 %s  p99 %s  max %s\n", pct(0.50).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), pct(1).Round(time.Microsecond))
	if t.failed.Load() > 0 {
		return fmt.Errorf("%d probes did not succeed", t.failed.Load())
	}
	return nil
}

var profilePath string

// startProfile starts the CPU profile requested with -cpuprofile, if any.
func startProfile() (stop func(), err error) {
	if profilePath == "" {
		return func() {}, nil
	}
	f, err := os.Create(profilePath)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// Command probeload measures what sustained HTTP probing costs the process
// that probes: N workers, each probing the test app's /readyz once per
// period like kubelet workers, for a fixed duration. The test app runs in a
// child process so that its CPU is not counted.
//
//	go run ./bench/probeload                  # 1,000 probes/s for 20 s
//	go run ./bench/probeload -workers 2000 -duration 30s
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
	"github.com/podgate/podgate/testapp"
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
	host, portStr, _ := cutHostPort(addr)
	port, _ := strconv.Atoi(portStr)

	p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: "/readyz", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP,
	}}, TimeoutSeconds: 1, PeriodSeconds: int32(period / time.Second), SuccessThreshold: 1, FailureThreshold: 3}
	target := probe.Target{PodIP: host, Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	runner := probe.NewRunner()

	var (
		measuring atomic.Bool
		probes    atomic.Int64
		failed    atomic.Int64
		mu        sync.Mutex
		latencies []time.Duration
	)
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Spread the workers over the period, as the kubelet's jitter does.
			select {
			case <-time.After(rand.N(period)):
			case <-wctx.Done():
				return
			}
			t := time.NewTicker(period)
			defer t.Stop()
			for {
				o := runner.Run(wctx, p, target)
				if measuring.Load() {
					probes.Add(1)
					if o.Result != probe.Success {
						failed.Add(1)
					}
					mu.Lock()
					latencies = append(latencies, o.Duration)
					mu.Unlock()
				}
				select {
				case <-t.C:
				case <-wctx.Done():
					return
				}
			}
		}()
	}

	fmt.Printf("probeload: %d workers x 1 probe / %s against %s (test app in pid %d), GOMAXPROCS=%d, %s\n",
		workers, period, addr, child.Process.Pid, runtime.GOMAXPROCS(0), runtime.Version())
	sleep(ctx, warmup)
	stopProfile, err := startProfile()
	if err != nil {
		cancel()
		wg.Wait()
		return err
	}
	cpu0, wall0 := cpuTime(), time.Now()
	measuring.Store(true)
	sleep(ctx, window)
	measuring.Store(false)
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	stopProfile()
	cancel()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	slices.Sort(latencies)
	pct := func(q float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[int(q*float64(len(latencies)-1))]
	}
	n := probes.Load()
	fmt.Printf("window        %s\n", wall.Round(time.Millisecond))
	fmt.Printf("probes        %d (%.0f/s), not success: %d\n", n, float64(n)/wall.Seconds(), failed.Load())
	fmt.Printf("cpu           %s = %.2f%% of one core\n", cpu.Round(time.Millisecond), 100*cpu.Seconds()/wall.Seconds())
	fmt.Printf("cpu per probe %s\n", (cpu / time.Duration(max(n, 1))).Round(time.Microsecond/10))
	fmt.Printf("latency       p50 %s  p99 %s  max %s\n", pct(0.50).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), pct(1).Round(time.Microsecond))
	if failed.Load() > 0 {
		return fmt.Errorf("%d probes did not succeed", failed.Load())
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

func cutHostPort(addr string) (string, string, bool) {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			return addr[:i], addr[i+1:], true
		}
	}
	return addr, "", false
}

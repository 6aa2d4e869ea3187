package probe

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const benchServerEnv = "PODGATE_PROBE_BENCH_SERVER"

// serveBenchTargets runs in the child process: an HTTP server and a bare
// TCP listener on loopback, ports printed on stdout, until stdin closes.
func serveBenchTargets() int {
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		_ = http.Serve(hl, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("ok"))
		}))
	}()
	go func() {
		for {
			c, err := tl.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	fmt.Printf("%d %d\n", hl.Addr().(*net.TCPAddr).Port, tl.Addr().(*net.TCPAddr).Port)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// benchTargets starts the server process and returns its HTTP and TCP ports.
func benchTargets(b *testing.B) (httpPort, tcpPort int) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), benchServerEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	if _, err := fmt.Fscan(bufio.NewReader(stdout), &httpPort, &tcpPort); err != nil {
		b.Fatalf("bench server: %v", err)
	}
	return httpPort, tcpPort
}

// cpuTime is this process's user+system CPU so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchProbe(b *testing.B, p *corev1.Probe) {
	r := NewRunner()
	tg := Target{PodIP: "127.0.0.1"}
	benchTicks(b, func(ctx context.Context) Outcome { return r.Run(ctx, p, tg) })
}

// benchTicks measures tick, one probe tick, back to back.
func benchTicks(b *testing.B, tick func(context.Context) Outcome) {
	ctx := context.Background()
	if o := tick(ctx); o.Result != Success {
		b.Fatalf("probe does not pass: %v %s", o.Result, o.Message)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		if o := tick(ctx); o.Result != Success {
			b.Fatalf("probe failed: %v %s", o.Result, o.Message)
		}
	}
	// The prober's own CPU per probe (the server is another process): the
	// budget is 50µs, i.e. 1,000 probes/s in 5% of a core.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

func BenchmarkHTTPAttempt(b *testing.B) {
	httpPort, _ := benchTargets(b)
	benchProbe(b, httpGetProbe(intstr.FromInt32(int32(httpPort)), "/healthz"))
}

// BenchmarkHTTPAttemptBound is BenchmarkHTTPAttempt through Runner.Bind,
// as the node agent's workers probe: the request is built once.
func BenchmarkHTTPAttemptBound(b *testing.B) {
	httpPort, _ := benchTargets(b)
	p := httpGetProbe(intstr.FromInt32(int32(httpPort)), "/healthz")
	benchTicks(b, NewRunner().Bind(p, Target{PodIP: "127.0.0.1"}))
}

func BenchmarkTCPAttempt(b *testing.B) {
	_, tcpPort := benchTargets(b)
	benchProbe(b, tcpProbeOf(intstr.FromInt32(int32(tcpPort)), ""))
}

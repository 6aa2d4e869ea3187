package node

import (
	"fmt"
	"net/netip"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
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

// BenchmarkAgentCPU runs 50 pods of two test app containers, each probed
// over HTTP every second (readiness only: 100 probes/s; readiness and
// liveness: 200 probes/s), and reports the node agent's own CPU use over
// 10 s (this process: the containers are not counted) as a percentage of
// one core, and its heap per pod.
func BenchmarkAgentCPU(b *testing.B) {
	for _, withLiveness := range []bool{false, true} {
		name := "readiness"
		if withLiveness {
			name = "readiness+liveness"
		}
		b.Run(name, func(b *testing.B) { benchAgentCPU(b, withLiveness) })
	}
}

func benchAgentCPU(b *testing.B, withLiveness bool) {
	const pods = 50
	h := newHarness(b)
	var sb strings.Builder
	for i := range pods {
		fmt.Fprintf(&sb, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p%d}\nspec:\n  containers:\n", i)
		for c, port := range []int{8080, 8081} {
			fmt.Fprintf(&sb, `  - name: c%d
    image: ghcr.io/podgate/testapp
    args: ["--port", "%d"]
    readinessProbe: {httpGet: {path: /readyz, port: %d}, periodSeconds: 1}
`, c, port, port)
			if withLiveness {
				fmt.Fprintf(&sb, "    livenessProbe: {httpGet: {path: /livez, port: %d}, periodSeconds: 1, failureThreshold: 60}\n", port)
			}
		}
	}
	h.start(sb.String())
	deadline := time.Now().Add(5 * time.Minute)
	for {
		list, _ := h.store.Pods.List("default")
		ready := 0
		for _, p := range list {
			if podReady(p) {
				ready++
			}
		}
		if ready == pods {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d pods ready", ready, pods)
		}
		time.Sleep(100 * time.Millisecond)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	for b.Loop() {
		before, wall := cpuTime(), time.Now()
		time.Sleep(10 * time.Second)
		used, elapsed := cpuTime()-before, time.Since(wall)
		b.ReportMetric(100*used.Seconds()/elapsed.Seconds(), "%cpu")
	}
	b.ReportMetric(float64(ms.HeapInuse)/pods/1024, "KiB-heap/pod")
	b.StopTimer()
	h.stop()
}

// cpuTime is this process's user and system CPU time (children excluded).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

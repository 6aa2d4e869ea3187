package main

import (
	"fmt"
	"time"
)

// Targets of issue 5.
const (
	targetRatio     = 1.3
	targetRSS       = 16 << 20
	targetReadiness = 10 * time.Millisecond
)

type report struct {
	throughput  throughputResult
	memory      memoryResult
	rideThrough []rideRun
	readiness   []time.Duration
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "MISSED"
}

func (r report) print(loadavg string) {
	t := r.throughput
	fmt.Println("== summary (issue 5 targets) ==")
	ratio := t.gate.rate() / t.plain.rate()
	fmt.Printf("throughput    gate %.0f req/s, plain ReverseProxy %.0f, direct %.0f: gate/plain %.2fx (target >= %.1fx: %s)\n",
		t.gate.rate(), t.plain.rate(), t.direct.rate(), ratio, targetRatio, verdict(ratio >= targetRatio))
	gp99, pp99 := quantile(t.gate.lat, 0.99), quantile(t.plain.lat, 0.99)
	fmt.Printf("p99 latency   gate %s, plain ReverseProxy %s, direct %s (target gate <= plain: %s)\n",
		ms(gp99), ms(pp99), ms(quantile(t.direct.lat, 0.99)), verdict(gp99 <= pp99))
	fmt.Printf("allocations   gate %.1f allocs, %.0f B per proxied request (its own: gate run minus direct run)\n",
		t.gateAllocs(), t.gateBytes())
	m := r.memory
	fmt.Printf("memory        gate process VmRSS %s (target <= %s: %s); RssAnon %s (%s), RssFile %s of which the binary %s; heap in use %s\n",
		mb(m.vmRSS), mb(targetRSS), verdict(m.vmRSS <= targetRSS), mb(m.rssAnon), verdict(m.rssAnon <= targetRSS),
		mb(m.rssFile), mb(m.binaryRSS), mb(m.heapInuse))
	fmt.Printf("              idle: VmRSS %s (%s), RssAnon %s\n", mb(m.idleRSS), verdict(m.idleRSS <= targetRSS), mb(m.idleAnon))
	for _, run := range r.rideThrough {
		line := fmt.Sprintf("ride-through  %-20s %-9s %d failed of %d", run.proxy, run.stop, run.res.failed, run.res.requests())
		if run.proxy == "gate process" {
			line += fmt.Sprintf(" (target 0: %s)", verdict(run.res.failed == 0))
		}
		fmt.Println(line)
	}
	med := quantile(r.readiness, 0.5)
	fmt.Printf("readiness     median %s, p99 %s over %d trials (target median <= %s: %s)\n",
		ms(med), ms(quantile(r.readiness, 0.99)), len(r.readiness), ms(targetReadiness), verdict(med <= targetReadiness))
	fmt.Printf("load avg      %s (at end)\n", loadavg)
}

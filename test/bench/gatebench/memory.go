package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/podgate/podgate/gate/contract"
)

type memoryResult struct {
	vmRSS, rssAnon, rssFile, binaryRSS, heapInuse float64 // bytes
	idleRSS, idleAnon                             float64 // bytes, ready and before any traffic
	load                                          loadResult
}

// measureMemory starts the gate process (it stays up for the ride-through),
// sends it 32 connections of load, and reads its memory at the end of the
// load, while it is still under load.
func measureMemory(ctx context.Context, p *pod, o options) (memoryResult, error) {
	g, err := p.startGate()
	if err != nil {
		return memoryResult{}, err
	}
	p.gate = g
	if err := waitHealth(ctx, p, http.StatusOK); err != nil {
		return memoryResult{}, err
	}
	// Idle: ready, the health checks' connection gone, nothing served.
	time.Sleep(time.Second)
	idle, err := readStatus(g.pid())
	if err != nil {
		return memoryResult{}, err
	}
	fmt.Printf("  idle (ready, no traffic yet): VmRSS %s  RssAnon %s  RssFile %s\n", mb(idle["VmRSS"]), mb(idle["RssAnon"]), mb(idle["RssFile"]))
	l := startLoad("http://"+p.gateAddr(p.cfg.ServingPort)+"/", throughputConns, true)
	select {
	case <-time.After(o.memLoad):
	case <-ctx.Done():
	}
	status, serr := readStatus(g.pid())
	binRSS, berr := mappedRSS(g.pid(), p.gateBin)
	metrics, merr := scrape("http://" + p.gateAddr(p.cfg.MetricsPort) + "/metrics")
	res := memoryResult{load: l.finish(), idleRSS: idle["VmRSS"], idleAnon: idle["RssAnon"]}
	if err := firstErr(ctx.Err(), serr, berr, merr); err != nil {
		return res, err
	}
	res.vmRSS, res.rssAnon, res.rssFile = status["VmRSS"], status["RssAnon"], status["RssFile"]
	res.binaryRSS, res.heapInuse = binRSS, metrics["go_memstats_heap_inuse_bytes"]
	fmt.Printf("  load through the gate process (pid %d): %.0f req/s, p50 %s, p99 %s, %d failed of %d\n",
		g.pid(), res.load.rate(), ms(res.load.pct(0.5)), ms(res.load.pct(0.99)), res.load.failed, res.load.requests())
	fmt.Printf("  /proc/%d/status: VmRSS %s  RssAnon %s  RssFile %s  RssShmem %s  VmHWM %s\n", g.pid(),
		mb(status["VmRSS"]), mb(status["RssAnon"]), mb(status["RssFile"]), mb(status["RssShmem"]), mb(status["VmHWM"]))
	fmt.Printf("  of RssFile, the gate binary's own mapped pages: %s (binary %s on disk)\n", mb(binRSS), mb(float64(p.binSize)))
	fmt.Printf("  its /metrics: go_memstats_heap_inuse_bytes %s, go_memstats_sys_bytes %s, process_resident_memory_bytes %s, go_goroutines %.0f\n",
		mb(metrics["go_memstats_heap_inuse_bytes"]), mb(metrics["go_memstats_sys_bytes"]),
		mb(metrics["process_resident_memory_bytes"]), metrics["go_goroutines"])
	return res, nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func mb(bytes float64) string { return fmt.Sprintf("%.1f MB", bytes/(1<<20)) }

// readStatus reads the kB figures of /proc/PID/status, in bytes.
func readStatus(pid int) (map[string]float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		v = strings.TrimSpace(v)
		if !ok || !strings.HasSuffix(v, " kB") {
			continue
		}
		if n, err := strconv.ParseFloat(strings.TrimSuffix(v, " kB"), 64); err == nil {
			out[k] = n * 1024
		}
	}
	if _, ok := out["VmRSS"]; !ok {
		return nil, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
	}
	return out, sc.Err()
}

// mappedRSS is the resident size of the mappings of file in the process.
func mappedRSS(pid int, file string) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var total float64
	inFile := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			// A mapping's header: range perms offset dev inode [path].
			inFile = len(fields) >= 6 && fields[5] == file
			continue
		}
		if inFile && fields[0] == "Rss:" && len(fields) >= 2 {
			kb, _ := strconv.ParseFloat(fields[1], 64)
			total += kb * 1024
		}
	}
	return total, sc.Err()
}

// scrape reads the un-labelled gauge and counter values of a metrics page.
func scrape(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", url, err)
	}
	out := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) > 0 {
				continue
			}
			switch {
			case m.Gauge != nil:
				out[name] = m.GetGauge().GetValue()
			case m.Counter != nil:
				out[name] = m.GetCounter().GetValue()
			}
		}
	}
	return out, nil
}

// health asks the gate for its readiness as the kubelet does.
func health(client *http.Client, url string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("User-Agent", contract.KubeProbeUserAgent(contract.KubeletVersion))
	req.Header.Set(contract.NetworkProbeHeader, contract.NetworkProbeQueue)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<10))
	return resp.StatusCode, nil
}

// waitHealth waits until the pod's gate answers health checks with code.
func waitHealth(ctx context.Context, p *pod, code int) error {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	url := "http://" + p.gateAddr(p.cfg.ServingPort) + "/"
	deadline := time.Now().Add(startWait)
	for {
		got, err := health(client, url)
		if err == nil && got == code {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the gate did not answer %d (last: %d %v)", code, got, err)
		}
		time.Sleep(time.Millisecond)
	}
}

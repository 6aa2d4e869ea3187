package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/lab"
)

// doorService is the front door's workload: one container, the test app,
// behind an injected gate.
const doorService = `apiVersion: serving.knative.dev/v1
kind: Service
metadata:
  name: bench
spec:
  template:
    spec:
      containers:
        - image: ghcr.io/podgate/testapp
          ports:
            - containerPort: 8080
`

// doorHost is the Service's host at the front door.
const doorHost = "bench.default.example.com"

// doorResult compares the front door with the same pod's gate alone.
type doorResult struct {
	conns              int
	door, gate         []sample
	doorCPU, gateCPU   time.Duration // over the door runs: the activator's process, the gate's
	doorReqs, gateReqs int64
	gateAloneCPU       time.Duration // the gate's over the gate-alone runs
}

// frontDoor runs `podgate run` with one pod and loads its front door and
// its gate in turns.
func (b *bench) frontDoor(ctx context.Context) (*doorResult, error) {
	manifest := filepath.Join(b.dir, "door.yaml")
	if err := os.WriteFile(manifest, []byte(doorService), 0o644); err != nil {
		return nil, err
	}
	p, err := lab.Start(ctx, lab.Config{Binary: b.podgate, PodCIDR: "127.0.90.0/24", Files: []string{manifest}})
	if err != nil {
		return nil, err
	}
	defer p.Stop(30 * time.Second)
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := lab.WaitServiceCondition(waitCtx, p.Client(), "default", "bench", lab.ServiceReady(corev1.ConditionTrue, "")); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, p.Stderr())
	}
	pods, err := p.Client().CoreV1().Pods("default").List(waitCtx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		return nil, fmt.Errorf("want the one pod of the Service: %v (%d pods)", err, len(pods.Items))
	}
	gatePid, err := descendantRunning(p.Pid(), "gate")
	if err != nil {
		return nil, err
	}
	door, gate := pidProc(p.Pid()), pidProc(gatePid)
	fmt.Printf("  podgate run (the front door) pid %d, its pod's gate pid %d (%q)\n", p.Pid(), gatePid, strings.Join(argsOf(gatePid), " "))
	gateURL := fmt.Sprintf("http://%s:%d/", pods.Items[0].Status.PodIP, contract.GatePort)

	r := &doorResult{conns: b.o.conns}
	w := wrkRun{conns: b.o.conns, duration: b.o.duration}
	for round := 0; round <= b.o.rounds; round++ {
		// Round 0 warms both paths up and is not counted.
		d0, g0 := door.cpu(), gate.cpu()
		dw := w
		dw.host = doorHost
		ds, err := dw.run(ctx, b.wrk, b.dir, p.FrontDoorURL())
		if err != nil {
			return nil, fmt.Errorf("through the front door: %w", err)
		}
		d1, g1 := door.cpu(), gate.cpu()
		gs, err := w.run(ctx, b.wrk, b.dir, gateURL)
		if err != nil {
			return nil, fmt.Errorf("the gate alone: %w", err)
		}
		g2 := gate.cpu()
		if ds.bad+gs.bad > 0 {
			return nil, fmt.Errorf("%d requests failed through the front door, %d at the gate alone", ds.bad, gs.bad)
		}
		if round == 0 {
			continue
		}
		r.door, r.gate = append(r.door, sample{wrk: ds}), append(r.gate, sample{wrk: gs})
		r.doorCPU, r.gateCPU, r.gateAloneCPU = r.doorCPU+d1-d0, r.gateCPU+g1-g0, r.gateAloneCPU+g2-g1
		r.doorReqs, r.gateReqs = r.doorReqs+ds.requests, r.gateReqs+gs.requests
		fmt.Printf("  round %d  front door %9.0f req/s  p99 %s   gate alone %9.0f req/s  p99 %s\n",
			round, ds.rate(), ms(ds.p99), gs.rate(), ms(gs.p99))
	}
	return r, nil
}

func rateOf(ss []sample) float64 {
	var n int64
	var w time.Duration
	for _, s := range ss {
		n, w = n+s.wrk.requests, w+s.wrk.window
	}
	if w == 0 {
		return 0
	}
	return float64(n) / w.Seconds()
}

func (d *doorResult) print(w io.Writer) {
	door, gate := rateOf(d.door), rateOf(d.gate)
	per := func(cpu time.Duration, n int64) float64 { return float64(cpu.Microseconds()) / float64(max(n, 1)) }
	ratio := door / max(gate, 1)
	fmt.Fprintf(w, "\nfront door (podgate run's activator + gate): %.0f req/s, the same gate alone %.0f req/s: %.2f (goal ≥ 0.8: %s)\n",
		door, gate, ratio, map[bool]string{true: "met", false: "NOT MET"}[ratio >= 0.8])
	fmt.Fprintf(w, "  one hop (the activator's process) %.1f µs of CPU per request; the gate %.1f µs behind the door, %.1f µs alone\n",
		per(d.doorCPU, d.doorReqs), per(d.gateCPU, d.doorReqs), per(d.gateAloneCPU, d.gateReqs))
	fmt.Fprintf(w, "  p50/p99 at %d conns: front door %s / %s, gate alone %s / %s\n", d.conns,
		ms(median(p(d.door, 50))), ms(median(p(d.door, 99))), ms(median(p(d.gate, 50))), ms(median(p(d.gate, 99))))
}

func p(ss []sample, q int) []time.Duration {
	out := make([]time.Duration, 0, len(ss))
	for _, s := range ss {
		if q == 50 {
			out = append(out, s.wrk.p50)
		} else {
			out = append(out, s.wrk.p99)
		}
	}
	return out
}

// pidProc is a proc for a process this command did not start (only its
// CPU and memory are read).
func pidProc(pid int) *proc { return &proc{pid: pid} }

// descendantRunning finds the process under root whose command line has
// word as an argument (podgate run starts the gate as `podgate gate`).
func descendantRunning(root int, word string) (int, error) {
	deadline := time.Now().Add(startWait)
	for {
		children := map[int][]int{}
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if pp, ok := parentOf(pid); ok {
				children[pp] = append(children[pp], pid)
			}
		}
		queue := []int{root}
		for len(queue) > 0 {
			pid := queue[0]
			queue = queue[1:]
			if pid != root && hasArg(argsOf(pid), word) {
				return pid, nil
			}
			queue = append(queue, children[pid]...)
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no process %q under podgate run (pid %d)", word, root)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}

func argsOf(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return []string{""}
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

func hasArg(args []string, word string) bool {
	for _, a := range args[1:] {
		if a == word {
			return true
		}
	}
	return false
}

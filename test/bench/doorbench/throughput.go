package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/lab"
	"github.com/podgate/podgate/test/bench/internal/benchenv"
)

// host routes the front door to the benchmark's service.
const host = "bench.default.example.com"

type throughput struct {
	conns int
	paths []*benchenv.Path // front door, gate alone
}

// measureThroughput runs one pod and loads it in turns through the front
// door and straight at its gate.
func measureThroughput(ctx context.Context, bin, manifest string, o options) (*throughput, error) {
	p, pod, err := startPodgate(ctx, bin, manifest, "127.0.88.0/24", 1)
	if err != nil {
		return nil, err
	}
	defer p.Stop(30 * time.Second)

	door := &benchenv.Path{Name: "front door (activator + gate)"}
	gate := &benchenv.Path{Name: "gate alone"}
	paths := []struct {
		res       *benchenv.Path
		url, host string
	}{
		{door, p.FrontDoorURL(), host},
		{gate, fmt.Sprintf("http://%s:%d/", pod.Status.PodIP, contract.GatePort), ""},
	}
	for round := 0; round <= o.rounds; round++ {
		for _, path := range paths {
			// Round 0 warms both paths up and is not counted.
			rec, window, err := benchenv.ClosedLoop(ctx, path.url, path.host, o.conns, o.duration)
			if err != nil {
				return nil, err
			}
			if round > 0 {
				path.res.Add(rec, window)
			}
		}
	}
	return &throughput{conns: o.conns, paths: []*benchenv.Path{door, gate}}, nil
}

func (t *throughput) print() {
	fmt.Printf("throughput, %d keep-alive connections, closed loop\n", t.conns)
	fmt.Printf("  %-32s %10s %8s %10s %10s %10s\n", "path", "req/s", "failed", "p50", "p90", "p99")
	for _, r := range t.paths {
		fmt.Printf("  %-32s %10.0f %8d %10s %10s %10s\n", r.Name, r.Rate(), r.Fail, ms(r.Pct(0.5)), ms(r.Pct(0.9)), ms(r.Pct(0.99)))
	}
	if g := t.paths[1]; g.Rate() > 0 {
		fmt.Printf("  front door / gate alone: %.2f of the throughput, p99 %+.2f ms\n",
			t.paths[0].Rate()/g.Rate(), float64(t.paths[0].Pct(0.99)-g.Pct(0.99))/float64(time.Millisecond))
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

// startPodgate runs the manifest with replicas pods and waits until the
// service is Ready (a pod takes traffic through the front door).
func startPodgate(ctx context.Context, bin, manifest, cidr string, replicas int) (*lab.Process, *corev1.Pod, error) {
	p, err := lab.Start(ctx, lab.Config{
		Binary: bin, PodCIDR: cidr, Files: []string{manifest},
		Args: []string{"--replicas", fmt.Sprint(replicas)},
	})
	if err != nil {
		return nil, nil, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := lab.WaitServiceCondition(waitCtx, p.Client(), "default", "bench", lab.ServiceReady(corev1.ConditionTrue, "")); err != nil {
		p.Stop(30 * time.Second)
		return nil, nil, fmt.Errorf("%w\n%s", err, p.Stderr())
	}
	pods, err := p.Client().CoreV1().Pods("").List(waitCtx, apiAll)
	if err != nil || len(pods.Items) == 0 {
		p.Stop(30 * time.Second)
		return nil, nil, fmt.Errorf("listing pods: %v", err)
	}
	return p, &pods.Items[0], nil
}

// Command gatebench measures the gate (`podgate gate`, issue 5) in one run,
// against one upstream (the test app as its own process), next to a plain
// httputil.ReverseProxy built here:
//
//   - throughput at 32 keep-alive connections: direct, plain reverse
//     proxy, gate (requests/s, p50/p99, the gate's allocations per request);
//   - memory: RSS of a real gate process idle and after 10 s of load;
//   - ride-through: failed requests while the serving container restarts
//     (stopped, started again 1 s later on the same port) under 16
//     connections, through the gate and through the plain proxy;
//   - readiness propagation: from the serving container accepting
//     connections to the gate answering ready the health check it held
//     since before the container listened.
//
// Everything runs on loopback (the pod gets an address 127.0.0.x of its
// own). The gate is podgate-gate, the gate alone as its image ships it
// (`-gate PATH` measures another binary, e.g. the whole podgate); it and
// podgate (the test app) are built into a temporary directory, the gate
// run with the environment inject.Gate writes for a Knative Service running the
// test app (examples/hello.yaml), its downward-API values filled in as
// `podgate run` would.
//
//	go run ./test/bench/gatebench
//	go run ./test/bench/gatebench -duration 5s -rounds 3 -trials 200
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/podgate/podgate/test/bench/internal/benchenv"
)

type options struct {
	duration  time.Duration // per throughput run
	rounds    int           // throughput rounds, paths interleaved
	memLoad   time.Duration // load before the RSS is read
	trials    int           // readiness propagation trials
	podIP     string        // "" picks one
	podgate   string        // prebuilt binary; "" builds one
	gate      string        // prebuilt gate binary; "" builds podgate-gate
	keepFiles bool
	rideRuns  int // ride-through runs per proxy and stop kind
}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 4*time.Second, "measured time of each throughput run")
	flag.IntVar(&o.rounds, "rounds", 2, "throughput rounds (direct, reverse proxy and gate interleaved)")
	flag.DurationVar(&o.memLoad, "mem-load", 10*time.Second, "load on the gate process before its RSS is read")
	flag.IntVar(&o.trials, "trials", 100, "readiness propagation trials")
	flag.StringVar(&o.podIP, "pod-ip", "", "loopback address for the pod (default: a free 127.0.0.x)")
	flag.StringVar(&o.podgate, "podgate", "", "use this podgate binary (the test app) instead of building one")
	flag.StringVar(&o.gate, "gate", "", "use this gate binary (podgate-gate, or podgate to measure the one binary) instead of building podgate-gate")
	flag.BoolVar(&o.keepFiles, "keep", false, "keep the temporary directory (binary, process logs)")
	flag.IntVar(&o.rideRuns, "ride-runs", 1, "ride-through runs of each kind")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "gatebench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.rounds < 1 || o.trials < 1 || o.rideRuns < 1 || o.duration <= 0 || o.memLoad <= 0 {
		return errors.New("-rounds, -trials and -ride-runs must be at least 1, -duration and -mem-load positive")
	}
	m := benchenv.ReadMachine()
	fmt.Printf("gatebench  %s\n", time.Now().Format("2006-01-02 15:04:05 MST"))
	fmt.Printf("machine    %s\n", m)
	fmt.Printf("load avg   %s (at start)\n", m.Loadavg)

	p, err := newPod(ctx, o)
	if err != nil {
		return err
	}
	defer p.close()
	fmt.Printf("pod        %s: test app %s (pid %d), gate env from inject.Gate (%d variables), binary %s (%.1f MB)\n\n",
		p.ip, p.appAddr(), p.app.pid(), len(p.gateEnv), p.gateBin, float64(p.binSize)/(1<<20))

	var r report
	fmt.Println("== 1. throughput, 32 keep-alive connections, same upstream ==")
	if r.throughput, err = measureThroughput(ctx, p, o); err != nil {
		return fmt.Errorf("throughput: %w", err)
	}
	fmt.Println()
	fmt.Printf("== 2. memory of a podgate gate process after %s of load ==\n", o.memLoad)
	if r.memory, err = measureMemory(ctx, p, o); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	fmt.Println()
	fmt.Println("== 3. ride-through: serving container down for 1 s under 16 connections ==")
	if r.rideThrough, err = measureRideThrough(ctx, p, o.rideRuns); err != nil {
		return fmt.Errorf("ride-through: %w", err)
	}
	fmt.Println()
	fmt.Printf("== 4. readiness propagation, %d trials ==\n", o.trials)
	if r.readiness, err = measureReadiness(ctx, p, o.trials); err != nil {
		return fmt.Errorf("readiness: %w", err)
	}
	fmt.Println()
	r.print(benchenv.ReadLoadavg())
	return nil
}

// Command doorbench measures `podgate run`'s front door (issue 6) with the
// real binary, a two-container Knative Service of the test app, and the
// lab's load generator (keep-alive connections, every request recorded):
//
//   - throughput and latency through the front door (activator + gate)
//     next to the gate alone (the same pod's gate port), closed loop at
//     -conns connections, the two paths interleaved -rounds times;
//
//   - failed requests while the sidecar's readiness flips every -flip
//     under load for -flip-for: with two replicas (one pod flips: the
//     other serves, target 0 failures) and with one (no pod is ready half
//     the time: requests are held, target 0 failures, 504 only past the
//     service's timeout).
//
//     go run ./test/bench/doorbench
//     go run ./test/bench/doorbench -duration 10s -rounds 3
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/podgate/podgate/test/bench/internal/benchenv"
)

type options struct {
	duration time.Duration // per throughput run
	rounds   int
	conns    int
	flip     time.Duration // sidecar readiness period of the flip runs
	flipFor  time.Duration
	flipRate float64 // requests/s during the flip runs
	podgate  string
	keep     bool
}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "measured time of each throughput run")
	flag.IntVar(&o.rounds, "rounds", 2, "throughput rounds (front door and gate alone interleaved)")
	flag.IntVar(&o.conns, "conns", 32, "keep-alive connections of the throughput runs")
	flag.DurationVar(&o.flip, "flip", 2*time.Second, "the sidecar's readiness changes this often")
	flag.DurationVar(&o.flipFor, "flip-for", 30*time.Second, "length of each flip run")
	flag.Float64Var(&o.flipRate, "flip-rate", 200, "requests per second during the flip runs")
	flag.StringVar(&o.podgate, "podgate", "", "use this podgate binary instead of building one")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (binary, manifests)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "doorbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.rounds < 1 || o.conns < 1 || o.duration <= 0 || o.flip <= 0 || o.flipFor < o.flip || o.flipRate <= 0 {
		return errors.New("-rounds and -conns must be at least 1; -duration, -flip and -flip-rate positive; -flip-for at least -flip")
	}
	dir, err := os.MkdirTemp("", "doorbench-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Println("files in", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	bin := o.podgate
	if bin == "" {
		if bin, err = benchenv.BuildPodgate(ctx, dir); err != nil {
			return err
		}
	}
	manifest := filepath.Join(dir, "two-containers.yaml")
	if err := os.WriteFile(manifest, []byte(benchenv.TwoContainers), 0o644); err != nil {
		return err
	}

	m := benchenv.ReadMachine()
	fmt.Printf("doorbench  %s\n", time.Now().Format("2006-01-02 15:04:05 MST"))
	fmt.Printf("machine    %s\n", m)
	fmt.Printf("load avg   %s (at start)\n\n", m.Loadavg)

	tp, err := measureThroughput(ctx, bin, manifest, o)
	if err != nil {
		return fmt.Errorf("throughput: %w", err)
	}
	tp.print()

	fmt.Println()
	for _, replicas := range []int{2, 1} {
		f, err := measureFlips(ctx, bin, manifest, replicas, o)
		if err != nil {
			return fmt.Errorf("flips with %d replicas: %w", replicas, err)
		}
		f.print()
	}
	fmt.Printf("\nload avg   %s (at end)\n", benchenv.ReadLoadavg())
	return nil
}

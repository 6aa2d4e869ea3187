// Command clusterdoor measures the activator's throughput and latency in
// a cluster next to `podgate run`'s front door, the same workload behind
// both: the two-container service of test/bench/doorbench (the test app and a
// sidecar, readiness every second), one pod, gated.
//
//   - podgate run: the Knative Service, through its front door (the
//     activator in podgate's process, then the pod's gate);
//   - a cluster of `podgate cluster up` (podgate installed): the same
//     service as a Deployment and Service opted in to the gate
//     (lab/manifest's ForCluster), applied with kubectl, through the
//     cluster's front door (the host's loopback port forwarded into the
//     cluster's network namespace, the activator's pod, then the pod's
//     gate).
//
// Closed loop at -conns keep-alive connections, the two paths
// interleaved -rounds times after a warm-up round that is not counted.
// It prints the machine, each path's requests/s, failures and latency
// percentiles, and how long `cluster up` took to its front door.
//
//	go run ./test/bench/clusterdoor                 # ~1.5 minutes, as root
//	go run ./test/bench/clusterdoor -duration 10s -rounds 3
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/podgate/podgate/lab"
	"github.com/podgate/podgate/lab/kubelab"
	"github.com/podgate/podgate/lab/manifest"
	"github.com/podgate/podgate/test/bench/internal/benchenv"
)

// The cluster's pods are reached from its network namespace (package
// podnet's Do): the main goroutine keeps the main thread, as podnet asks.
func init() { runtime.LockOSThread() }

type options struct {
	duration time.Duration
	rounds   int
	conns    int
	podgate  string
	keep     bool
}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "measured time of each round of each path")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds (the two paths interleaved), after a warm-up round")
	flag.IntVar(&o.conns, "conns", 32, "keep-alive connections")
	flag.StringVar(&o.podgate, "podgate", "", "use this podgate binary (static: the cluster's image is made of it) instead of building one")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (binary, manifests, the cluster's directory and logs)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "clusterdoor:", err)
		os.Exit(1)
	}
}

// service is the benchmark's service, test/bench/doorbench's.
const service = "bench"

func run(ctx context.Context, o options) error {
	if o.rounds < 1 || o.conns < 1 || o.duration <= 0 {
		return errors.New("-rounds and -conns must be at least 1, -duration positive")
	}
	dir, err := os.MkdirTemp("", "clusterdoor-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Println("files in", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if o.podgate == "" {
		if o.podgate, err = benchenv.BuildPodgate(ctx, dir); err != nil {
			return err
		}
	}
	m, err := manifest.Parse([]byte(benchenv.TwoContainers))
	if err != nil {
		return err
	}
	machine := benchenv.ReadMachine()
	fmt.Printf("clusterdoor  %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Printf("machine      %s\n", machine)
	fmt.Printf("load avg     %s (at start)\n\n", machine.Loadavg)

	local, err := startLocal(ctx, o.podgate, dir, m)
	if err != nil {
		return fmt.Errorf("podgate run: %w", err)
	}
	defer local.Stop(time.Minute)
	began := time.Now()
	c, err := kubelab.Start(ctx, kubelab.Config{Binary: o.podgate, Dir: filepath.Join(dir, "cluster"), PodCIDR: "10.250.90.0/24"})
	if err != nil {
		return err
	}
	upToDoor := time.Since(began)
	defer c.Stop(2 * time.Minute)
	ns, err := startOnCluster(ctx, c, m)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	defer ns.Stop(time.Minute)

	paths := []struct {
		res  *benchenv.Path
		w    lab.World
		what string
	}{
		{&benchenv.Path{Name: "podgate run: front door"}, local, "activator in podgate → gate"},
		{&benchenv.Path{Name: "cluster: front door"}, ns, "forward → activator pod → gate"},
	}
	for round := 0; round <= o.rounds; round++ {
		for _, p := range paths {
			rec, window, err := benchenv.ClosedLoop(ctx, p.w.FrontDoorURL(), p.w.Host(service), o.conns, o.duration)
			if err != nil {
				return err
			}
			if round > 0 { // round 0 warms both up
				p.res.Add(rec, window)
			}
		}
	}
	fmt.Printf("cluster up → front door ready: %s\n\n", upToDoor.Round(10*time.Millisecond))
	fmt.Printf("%d keep-alive connections, closed loop, %d rounds of %s per path\n", o.conns, o.rounds, o.duration)
	fmt.Printf("| path | hops | req/s | failed | p50 | p90 | p99 |\n|---|---|---|---|---|---|---|\n")
	for _, p := range paths {
		r := p.res
		fmt.Printf("| %s | %s | %.0f | %d | %s | %s | %s |\n", r.Name, p.what, r.Rate(), r.Fail, ms(r.Pct(0.5)), ms(r.Pct(0.9)), ms(r.Pct(0.99)))
	}
	if l := paths[0].res; l.Rate() > 0 {
		cl := paths[1].res
		fmt.Printf("\ncluster / podgate run: %.2f of the throughput, p99 %+.2f ms\n", cl.Rate()/l.Rate(), float64(cl.Pct(0.99)-l.Pct(0.99))/float64(time.Millisecond))
	}
	fmt.Printf("load avg     %s (at end)\n", benchenv.ReadLoadavg())
	return nil
}

// startLocal runs podgate run on the manifest and waits until its
// service takes traffic.
func startLocal(ctx context.Context, bin, dir string, m *manifest.Manifest) (lab.Local, error) {
	file, err := m.Write(dir, "bench.yaml")
	if err != nil {
		return lab.Local{}, err
	}
	p, err := lab.Start(ctx, lab.Config{Binary: bin, PodCIDR: "127.0.89.0/24", Files: []string{file}})
	if err != nil {
		return lab.Local{}, err
	}
	w := lab.Local{Process: p}
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := w.WaitService(waitCtx, service, lab.Serving); err != nil {
		_ = w.Stop(time.Minute)
		return lab.Local{}, fmt.Errorf("%w\n%s", err, w.Logs())
	}
	return w, nil
}

// startOnCluster applies the manifest in a namespace of its own and
// waits until its Service has a ready endpoint.
func startOnCluster(ctx context.Context, c *kubelab.Cluster, m *manifest.Manifest) (*kubelab.Namespace, error) {
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	ns, err := c.Namespace(waitCtx, "bench")
	if err != nil {
		return nil, err
	}
	if err := ns.Apply(waitCtx, m, 1); err != nil {
		return nil, err
	}
	if err := ns.WaitService(waitCtx, service, lab.Serving); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, ns.Logs())
	}
	return ns, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

// Command clusterbench measures `podgate cluster up` with the real
// binary, -runs times (each a fresh cluster in a directory and pod CIDR
// of its own, stopped with SIGINT after):
//
//   - cluster up → node Ready: from the start of the process until the
//     API server, through the host's loopback forward, shows the Node
//     Ready (the control plane's start dominates);
//   - cluster up → front door ready: until cluster up printed its front
//     door (podgate's image built, kube/deploy/base applied, the webhook and
//     the activator ready); not with -no-install;
//   - Deployment of 2 replicas → 2 ready endpoints: from the create call
//     until the EndpointSlice of its Service (written by the real
//     EndpointSlice controller) has both pods ready, at their pod IPs;
//   - Ctrl-C → exit: SIGINT until `cluster up` returned, everything
//     stopped.
//
// It prints every run and the medians.
//
//	go run ./test/bench/clusterbench
//	go run ./test/bench/clusterbench -runs 5
//	go run ./test/bench/clusterbench -no-install   # the bare cluster
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/podgate/podgate/test/bench/internal/benchenv"
)

// waitLimit bounds each wait of a run.
const waitLimit = 3 * time.Minute

type options struct {
	runs      int
	podgate   string
	keep      bool
	noInstall bool
}

// result is one run's figures.
type result struct {
	nodeReady, frontDoor, endpointsReady, stop time.Duration
}

func main() {
	var o options
	flag.IntVar(&o.runs, "runs", 3, "clusters started, one after the other")
	flag.StringVar(&o.podgate, "podgate", "", "use this podgate binary instead of building one")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (binary, cluster directories and logs)")
	flag.BoolVar(&o.noInstall, "no-install", false, "bare clusters (cluster up --no-install): no podgate image, webhook, activator or front door")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "clusterbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.runs < 1 {
		return fmt.Errorf("-runs %d: at least 1", o.runs)
	}
	tmp, err := os.MkdirTemp("", "clusterbench-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintln(os.Stderr, "keeping", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	if o.podgate == "" {
		if o.podgate, err = benchenv.BuildPodgate(ctx, tmp); err != nil {
			return err
		}
	}
	m := benchenv.ReadMachine()
	fmt.Printf("%s, %s, load %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), m, m.Loadavg)
	var results []result
	for i := range o.runs {
		r, err := oneRun(ctx, o, filepath.Join(tmp, fmt.Sprintf("run%d", i+1)), fmt.Sprintf("10.250.%d.0/24", 200+i%50))
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		fmt.Printf("run %d: cluster up → node Ready %s, → front door ready %s, Deployment of 2 → 2 ready endpoints %s, SIGINT → exit %s\n",
			i+1, ms(r.nodeReady), ms(r.frontDoor), ms(r.endpointsReady), ms(r.stop))
		results = append(results, r)
	}
	pick := func(f func(result) time.Duration) time.Duration {
		var ds []time.Duration
		for _, r := range results {
			ds = append(ds, f(r))
		}
		return median(ds)
	}
	fmt.Printf("\nmedian of %d (load %s at the end):\n", len(results), benchenv.ReadLoadavg())
	fmt.Printf("| step | median |\n|---|---|\n")
	fmt.Printf("| `cluster up` → node Ready | %s |\n", ms(pick(func(r result) time.Duration { return r.nodeReady })))
	if !o.noInstall {
		fmt.Printf("| `cluster up` → front door ready (podgate installed) | %s |\n", ms(pick(func(r result) time.Duration { return r.frontDoor })))
	}
	fmt.Printf("| Deployment of 2 replicas → 2 ready endpoints | %s |\n", ms(pick(func(r result) time.Duration { return r.endpointsReady })))
	fmt.Printf("| Ctrl-C → `cluster up` exited, nothing left | %s |\n", ms(pick(func(r result) time.Duration { return r.stop })))
	return nil
}

// oneRun starts a cluster in dir, measures, and stops it.
func oneRun(ctx context.Context, o options, dir, cidr string) (result, error) {
	var r result
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return r, err
	}
	logf, err := os.Create(filepath.Join(dir, "cluster-up.log"))
	if err != nil {
		return r, err
	}
	defer logf.Close()
	args := []string{"cluster", "up", "--dir", dir, "--pod-cidr", cidr, "--listen", "127.0.0.1:0", "--front-door", "127.0.0.1:0"}
	if o.noInstall {
		args = append(args, "--no-install")
	}
	cmd := exec.Command(o.podgate, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		return r, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	defer func() {
		if !stopped {
			_ = cmd.Process.Signal(os.Interrupt)
			<-exited
		}
	}()
	k, err := benchenv.WaitNodeReady(ctx, dir, waitLimit, exited)
	if err != nil {
		return r, fmt.Errorf("%w (log: %s)", err, logf.Name())
	}
	r.nodeReady = time.Since(begin)
	if !o.noInstall {
		if err := benchenv.WaitFrontDoor(ctx, logf.Name(), waitLimit, exited); err != nil {
			return r, fmt.Errorf("%w (log: %s)", err, logf.Name())
		}
		r.frontDoor = time.Since(begin)
	}
	c := &client{k: k}
	if r.endpointsReady, err = c.deployAndWait(ctx, cidr); err != nil {
		return r, fmt.Errorf("%w (log: %s)", err, logf.Name())
	}
	t := time.Now()
	stopped = true
	_ = cmd.Process.Signal(os.Interrupt)
	if err := <-exited; err != nil {
		return r, fmt.Errorf("cluster up after SIGINT: %w (log: %s)", err, logf.Name())
	}
	r.stop = time.Since(t)
	return r, nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }

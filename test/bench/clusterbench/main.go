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
//     not with -knative;
//   - Ctrl-C → exit: SIGINT until `cluster up` returned, everything
//     stopped.
//
// With -knative each run is `podgate cluster up --knative` (the gate as
// Knative's queue sidecar, cluster up's default), and instead of the
// Deployment:
//
//   - cluster up → Knative ready: until cluster up printed its Knative
//     ingress (kube-proxy, CoreDNS, Knative Serving and Traefik ready);
//   - Knative Service → Ready: from the create call of
//     examples/hello.yaml's Knative Service in namespace default until
//     its Ready condition is True;
//   - → first 200 through the ingress: from the same create call until a
//     GET through the ingress's loopback port, with Host
//     hello.default.example.com, was answered 200 by the test app (asked
//     every 20 ms from the create on, on a new connection each time).
//
// It prints every run as it ends, then every run and the medians as a
// markdown table.
//
//	go run ./test/bench/clusterbench
//	go run ./test/bench/clusterbench -runs 5
//	go run ./test/bench/clusterbench -no-install   # the bare cluster
//	go run ./test/bench/clusterbench -knative      # as root, the Knative stack built (hack/knative-build.sh)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/podgate/podgate/internal/knativebin"
	"github.com/podgate/podgate/test/bench/internal/benchenv"
)

// waitLimit bounds each wait of a run.
const waitLimit = 3 * time.Minute

type options struct {
	runs      int
	podgate   string
	keep      bool
	noInstall bool
	knative   bool
	// hello is examples/hello.yaml (-knative).
	hello []byte
}

// result is one run's figures.
type result struct {
	nodeReady, frontDoor, endpointsReady, stop time.Duration
	// With -knative.
	knativeReady, serviceReady, firstAnswer time.Duration
}

// column is one figure of a run, as the table heads it.
type column struct {
	head string
	of   func(result) time.Duration
}

// columns are the figures of a run in o's mode.
func columns(o options) []column {
	cols := []column{{"`cluster up` → node Ready", func(r result) time.Duration { return r.nodeReady }}}
	if !o.noInstall {
		cols = append(cols, column{"→ front door ready", func(r result) time.Duration { return r.frontDoor }})
	}
	if o.knative {
		cols = append(cols,
			column{"→ Knative ready", func(r result) time.Duration { return r.knativeReady }},
			column{"Knative Service `hello` → Ready", func(r result) time.Duration { return r.serviceReady }},
			column{"→ first 200 through the ingress", func(r result) time.Duration { return r.firstAnswer }})
	} else {
		cols = append(cols, column{"Deployment of 2 → 2 ready endpoints", func(r result) time.Duration { return r.endpointsReady }})
	}
	return append(cols, column{"SIGINT → exit", func(r result) time.Duration { return r.stop }})
}

func main() {
	var o options
	flag.IntVar(&o.runs, "runs", 3, "clusters started, one after the other")
	flag.StringVar(&o.podgate, "podgate", "", "use this podgate binary instead of building one")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (binary, cluster directories and logs)")
	flag.BoolVar(&o.noInstall, "no-install", false, "bare clusters (cluster up --no-install): no podgate image, webhook, activator or front door")
	flag.BoolVar(&o.knative, "knative", false, "clusters with Knative Serving (cluster up --knative), a Knative Service instead of the Deployment")
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
	if o.knative && o.noInstall {
		return errors.New("-knative needs podgate installed: it cannot go with -no-install")
	}
	if o.knative {
		if err := prepareKnative(ctx, &o); err != nil {
			return err
		}
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
	cols := columns(o)
	var results []result
	for i := range o.runs {
		r, err := oneRun(ctx, o, filepath.Join(tmp, fmt.Sprintf("run%d", i+1)), podCIDR(o, i))
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		var figures []string
		for _, c := range cols {
			figures = append(figures, c.head+" "+seconds(c.of(r)))
		}
		fmt.Printf("run %d: %s\n", i+1, strings.Join(figures, ", "))
		results = append(results, r)
	}
	runs := "runs"
	if len(results) == 1 {
		runs = "run"
	}
	fmt.Printf("\n%d %s, load %s at the end:\n\n", len(results), runs, benchenv.ReadLoadavg())
	printTable(cols, results)
	return nil
}

// prepareKnative finds the Knative stack's binaries before the first
// cluster starts (building them on a cold cache: tens of minutes), so
// that each run's wait is for the install alone, and reads the Knative
// Service the runs apply.
func prepareKnative(ctx context.Context, o *options) error {
	if _, err := knativebin.Dir(); err != nil {
		return err
	}
	root, err := benchenv.ModuleRoot(ctx)
	if err != nil {
		return err
	}
	o.hello, err = os.ReadFile(filepath.Join(root, "examples", "hello.yaml"))
	return err
}

// podCIDR is run i's pod range: 10.250.200–249 for the Deployment runs,
// 10.254.100–149 with -knative, so that a run of each mode can go side by
// side.
func podCIDR(o options, i int) string {
	if o.knative {
		return fmt.Sprintf("10.254.%d.0/24", 100+i%50)
	}
	return fmt.Sprintf("10.250.%d.0/24", 200+i%50)
}

// printTable prints one row per run and the medians, as docs/benchmarks.md
// has them.
func printTable(cols []column, results []result) {
	head, rule := "| run |", "|---|"
	for _, c := range cols {
		head += " " + c.head + " |"
		rule += "---|"
	}
	fmt.Println(head)
	fmt.Println(rule)
	for i, r := range results {
		row := fmt.Sprintf("| %d |", i+1)
		for _, c := range cols {
			row += " " + seconds(c.of(r)) + " |"
		}
		fmt.Println(row)
	}
	row := "| **median** |"
	for _, c := range cols {
		var ds []time.Duration
		for _, r := range results {
			ds = append(ds, c.of(r))
		}
		row += " **" + seconds(median(ds)) + "** |"
	}
	fmt.Println(row)
}

// upProcess is a running `podgate cluster up`.
type upProcess struct {
	cmd *exec.Cmd
	// exited delivers Wait's error once, then is closed: every later
	// receive (a second wait, the stop) returns at once.
	exited chan error
	begin  time.Time
	// log holds cluster up's own lines (stderr), pods the pods' output
	// (stdout): the waits read the log over and over, kept small.
	log, pods *os.File
	stopped   bool
}

func startUp(o options, dir, cidr string) (*upProcess, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	u := &upProcess{exited: make(chan error, 1)}
	var err error
	if u.log, err = os.Create(filepath.Join(dir, "cluster-up.log")); err != nil {
		return nil, err
	}
	if u.pods, err = os.Create(filepath.Join(dir, "pods.log")); err != nil {
		u.log.Close()
		return nil, err
	}
	args := []string{"cluster", "up", "--dir", dir, "--pod-cidr", cidr, "--listen", "127.0.0.1:0", "--front-door", "127.0.0.1:0"}
	if o.noInstall {
		args = append(args, "--no-install")
	}
	if o.knative {
		args = append(args, "--knative", "--ingress", "127.0.0.1:0")
	}
	u.cmd = exec.Command(o.podgate, args...)
	u.cmd.Stdout, u.cmd.Stderr = u.pods, u.log
	u.begin = time.Now()
	if err := u.cmd.Start(); err != nil {
		u.close()
		return nil, err
	}
	go func() {
		u.exited <- u.cmd.Wait()
		close(u.exited)
	}()
	return u, nil
}

// stop sends SIGINT and waits for the exit; it returns how long that took.
func (u *upProcess) stop() (time.Duration, error) {
	t := time.Now()
	u.stopped = true
	_ = u.cmd.Process.Signal(os.Interrupt)
	if err := <-u.exited; err != nil {
		return 0, fmt.Errorf("cluster up after SIGINT: %w", err)
	}
	return time.Since(t), nil
}

// close stops the cluster if a run ended early, and closes the logs.
func (u *upProcess) close() {
	if !u.stopped && u.cmd.Process != nil {
		_ = u.cmd.Process.Signal(os.Interrupt)
		<-u.exited
	}
	u.log.Close()
	u.pods.Close()
}

// oneRun starts a cluster in dir, measures, and stops it.
func oneRun(ctx context.Context, o options, dir, cidr string) (r result, err error) {
	u, err := startUp(o, dir, cidr)
	if err != nil {
		return r, err
	}
	defer u.close()
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w (log: %s)", err, u.log.Name())
		}
	}()
	k, err := benchenv.WaitNodeReady(ctx, dir, waitLimit, u.exited)
	if err != nil {
		return r, err
	}
	r.nodeReady = time.Since(u.begin)
	if !o.noInstall {
		if err := benchenv.WaitFrontDoor(ctx, u.log.Name(), waitLimit, u.exited); err != nil {
			return r, err
		}
		r.frontDoor = time.Since(u.begin)
	}
	if o.knative {
		err = measureKnative(ctx, u, dir, o.hello, &r)
	} else {
		c := &client{k: k}
		r.endpointsReady, err = c.deployAndWait(ctx, cidr)
	}
	if err != nil {
		return r, err
	}
	r.stop, err = u.stop()
	return r, err
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// seconds is d as docs/benchmarks.md writes it: "8.71 s".
func seconds(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

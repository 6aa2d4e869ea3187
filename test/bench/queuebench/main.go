// Command queuebench measures podgate's gate against Knative's own
// queue-proxy side by side, in one run on one machine (issue 25):
//
//   - direct: the load straight at the upstream (the limit);
//   - tuned proxy: a net/http/httputil.ReverseProxy with a keep-alive pool
//     as large as the load, in a process of its own;
//   - queue-proxy: Knative Serving v0.50.0's cmd/queue, the version `podgate
//     cluster up --knative` installs, built from the Go module proxy by
//     hack/knative-build.sh (internal/knativebin);
//   - gate: podgate-gate, the gate's image binary;
//   - front door: `podgate run`'s activator in front of a gate, next to
//     the same gate alone.
//
// queue-proxy and the gate get the same environment, the one Knative's
// revision reconciler writes (test/queueenv), with Prometheus request
// metrics switched on, and an autoscaler-like scrape of their statistics
// every second. The upstream is the same small Go HTTP server for all.
//
// The load is wrk (Debian's package, installed with apt-get when missing):
// a closed loop at -conns connections for throughput and CPU per request,
// then a fixed rate (the same for every path; default half of what
// queue-proxy sustained) for latency at equal load, then the same with the
// proxy in a cgroup limited to -cpu-limit of a core (CFS quota, the
// mechanism of a Kubernetes CPU limit). CPU is the proxy process's run time
// (its threads' /proc/PID/task/TID/schedstat) over the run divided by the requests
// answered; memory is its VmRSS idle (1 s after it answered) and after the
// load.
//
// Everything runs inside a network namespace of its own (the command
// re-executes itself there), so queue-proxy's fixed ports (8012, 8022,
// 9090, 9091) clash with nothing on the host, `podgate run` included.
// It needs root (the namespace and the cgroup).
//
//	sudo go run ./test/bench/queuebench
//	sudo go run ./test/bench/queuebench -duration 10s -rounds 3
//	sudo go run ./test/bench/queuebench -profile /tmp/profiles   # then go tool pprof
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

type options struct {
	duration time.Duration // each measured wrk run
	rounds   int           // closed-loop rounds, paths interleaved
	conns    int           // closed-loop connections
	rate     float64       // fixed rate; 0: half of queue-proxy's closed-loop rate
	limRate  float64       // fixed rate under the CPU limit; 0: half of queue-proxy's there
	cpuLimit float64       // cores, for the throttled runs; 0 skips them
	ownCore  bool          // measure with the proxy on a core of its own too
	door     bool          // measure the front door too
	onlyDoor bool          // measure only the front door
	keep     bool
	profile  string   // directory for CPU profiles of the proxies; "" takes none
	gate     string   // prebuilt podgate-gate
	proxyEnv []string // more environment for queue-proxy and the gate
	gateEnv  []string // more environment for the gate alone
	podgate  string   // prebuilt podgate
}

func main() {
	// The re-executed forms of this binary: the tuned proxy, the upstream,
	// and the exec into a cgroup.
	if len(os.Args) > 1 {
		if code, ok := runRole(os.Args[1], os.Args[2:]); ok {
			os.Exit(code)
		}
	}
	var o options
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "length of each measured run")
	flag.IntVar(&o.rounds, "rounds", 2, "closed-loop rounds (paths interleaved)")
	flag.IntVar(&o.conns, "conns", 32, "keep-alive connections of the closed-loop runs")
	flag.Float64Var(&o.rate, "rate", 0, "requests/s of the equal-load runs (default: half of queue-proxy's closed-loop rate)")
	flag.BoolVar(&o.ownCore, "own-core", true, "measure with the proxy alone on one CPU too, wrk and the upstream on the others (needs 2 CPUs)")
	flag.Float64Var(&o.limRate, "limited-rate", 0, "requests/s of the equal-load runs under -cpu-limit (default: half of queue-proxy's closed-loop rate there; near that rate, queue-proxy is throttled)")
	flag.Float64Var(&o.cpuLimit, "cpu-limit", 0.25, "CPU limit of the proxy in the throttled runs, in cores (0 skips them)")
	flag.BoolVar(&o.door, "front-door", true, "measure podgate run's front door next to its gate")
	flag.BoolVar(&o.onlyDoor, "only-front-door", false, "measure the front door alone (skips the comparison with queue-proxy)")
	flag.StringVar(&o.profile, "profile", "", "write a CPU profile of each proxy's first closed-loop run in each placement into this directory (Knative's profiling switched on for queue-proxy and the gate)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (binaries, process logs)")
	flag.StringVar(&o.gate, "gate", "", "use this podgate-gate binary instead of building one")
	flag.StringVar(&o.podgate, "podgate", "", "use this podgate binary (front door) instead of building one")
	flag.Func("proxy-env", "KEY=VALUE added to queue-proxy's and the gate's environment (repeatable), e.g. GOMAXPROCS=1", envFlag(&o.proxyEnv))
	flag.Func("gate-env", "KEY=VALUE added to the gate's environment alone (repeatable), e.g. GOGC=200", envFlag(&o.gateEnv))
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "queuebench: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	if o.rounds < 1 || o.conns < 1 || o.duration < time.Second || o.rate < 0 || o.limRate < 0 || o.cpuLimit < 0 || o.cpuLimit > 64 {
		fmt.Fprintln(os.Stderr, "queuebench: -rounds and -conns must be at least 1, -duration at least 1s, -rate and -cpu-limit not negative")
		os.Exit(2)
	}

	if os.Getenv(inNetnsEnv) == "" {
		os.Exit(reexecInNetns())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "queuebench:", err)
		os.Exit(1)
	}
}

// envFlag appends a flag's KEY=VALUE to env.
func envFlag(env *[]string) func(string) error {
	return func(v string) error {
		if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
			return fmt.Errorf("want KEY=VALUE, not %q", v)
		}
		*env = append(*env, v)
		return nil
	}
}

func run(ctx context.Context, o options) error {
	if err := setUpNetns(); err != nil {
		return err
	}
	wrk, err := ensureWrk(ctx)
	if err != nil {
		return err
	}
	b, err := newBench(ctx, o, wrk)
	if err != nil {
		return err
	}
	defer b.close()
	b.header()

	r := &results{conns: o.conns}
	for pl := range numPlacements {
		r.titles[pl] = b.describe(pl)
	}
	if o.onlyDoor {
		fmt.Printf("== front door: podgate run's activator + gate, next to the same gate alone ==\n")
		if r.door, err = b.frontDoor(ctx); err != nil {
			return fmt.Errorf("front door: %w", err)
		}
		r.door.print(os.Stdout)
		return nil
	}
	fmt.Printf("== 1. %s: closed loop, %d keep-alive connections, %s per run, %d rounds; then an equal load ==\n",
		b.describe(sharedCores), o.conns, o.duration, o.rounds)
	if err := b.series(ctx, r, sharedCores); err != nil {
		return err
	}
	if o.ownCore {
		fmt.Printf("\n== 2. %s ==\n", b.describe(ownCore))
		restore, err := b.pinBench(b.otherCPUs)
		if err != nil {
			return err
		}
		err = b.series(ctx, r, ownCore)
		restore()
		if err != nil {
			return err
		}
	}
	if o.cpuLimit > 0 {
		if err := b.cgroupUsable(); err != nil {
			return fmt.Errorf("-cpu-limit: %w (pass -cpu-limit 0 to skip the throttled runs)", err)
		}
		fmt.Printf("\n== 3. %s ==\n", b.describe(limited))
		if err := b.series(ctx, r, limited); err != nil {
			return err
		}
	}
	if o.door {
		fmt.Printf("\n== 4. front door: podgate run's activator + gate, next to the same gate alone ==\n")
		if r.door, err = b.frontDoor(ctx); err != nil {
			return fmt.Errorf("front door: %w", err)
		}
	}
	fmt.Println()
	r.print(os.Stdout)
	fmt.Printf("\nload avg   %s (at end)\n", loadavg())
	return nil
}

// series runs the closed loop, then the equal load: half of what
// queue-proxy sustained in the closed loop of the same placement, unless
// -rate (every process on every core) or -limited-rate (under the CPU
// limit) says otherwise.
func (b *bench) series(ctx context.Context, r *results, pl placement) error {
	if err := b.closedLoop(ctx, r, pl); err != nil {
		return err
	}
	r.rate[pl] = roundRate(r.capacity(queueProxy, pl) / 2)
	if pl == sharedCores && b.o.rate > 0 {
		r.rate[pl] = b.o.rate
	}
	if pl == limited && b.o.limRate > 0 {
		r.rate[pl] = b.o.limRate
	}
	if r.rate[pl] <= 0 {
		return errors.New("queue-proxy answered nothing")
	}
	fmt.Printf("  equal load: %.0f requests/s for every path\n", r.rate[pl])
	return b.fixedRate(ctx, r, pl, r.rate[pl])
}

// roundRate rounds a rate down to two significant figures.
func roundRate(r float64) float64 {
	if r < 100 {
		return float64(int(r))
	}
	scale := 1.0
	for r/scale >= 100 {
		scale *= 10
	}
	return float64(int(r/scale)) * scale
}

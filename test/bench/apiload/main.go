// Command apiload measures the load injected pods put on the API server,
// for the two ways a gate can learn its pod's containers and write its
// condition:
//
//   - node: the gate asks podgate's node status service on its node
//     (PODGATE_STATUS_SOURCE=http://$(PODGATE_HOST_IP):9026, what the
//     injection writes); the service holds one watch of the node's pods
//     and writes the gates' conditions;
//   - api: every gate holds its own watch of its pod on the API server
//     and patches its pod's status itself (PODGATE_STATUS_SOURCE=
//     kubernetes, with a RoleBinding that grants it that), the design
//     podgate had before.
//
// For each design it starts a fresh `podgate cluster up` (its own
// directory and pod range, --max-pods so that the largest size fits),
// scales a Deployment of injected test-app pods to each -sizes value,
// waits until every pod is Ready, and then, over -window of idle pods,
// reads the API server's own metrics: watches of pods held open
// (apiserver_longrunning_requests), requests per second
// (apiserver_request_total), its CPU (process_cpu_seconds_total) and
// resident memory (process_resident_memory_bytes).
//
//	sudo go run ./test/bench/apiload
//	sudo go run ./test/bench/apiload -sizes 10,100,250 -designs node,api
//
// It needs root (cluster up) and memory for the largest size (each pod
// is a gate and a test app: about 40 MB).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/podgate/podgate/test/bench/internal/benchenv"
)

type options struct {
	sizes   []int
	designs []string
	window  time.Duration
	podgate string
	keep    bool
	cidr    string
}

func main() {
	var o options
	var sizes, designs string
	flag.StringVar(&sizes, "sizes", "10,100,250", "pod counts measured, in this order, comma-separated")
	flag.StringVar(&designs, "designs", designNode+","+designAPI, "designs measured, each on a fresh cluster: node, api")
	flag.DurationVar(&o.window, "window", 30*time.Second, "how long the idle pods are measured at each size")
	flag.StringVar(&o.podgate, "podgate", "", "use this podgate binary instead of building one")
	flag.StringVar(&o.cidr, "pod-cidr", "10.249.4.0/23", "the clusters' pod range (one cluster at a time)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (binary, cluster directories and logs)")
	flag.Parse()
	var err error
	if o.sizes, err = parseSizes(sizes); err != nil {
		fmt.Fprintln(os.Stderr, "apiload: -sizes:", err)
		os.Exit(2)
	}
	for _, d := range strings.Split(designs, ",") {
		if d != designNode && d != designAPI {
			fmt.Fprintf(os.Stderr, "apiload: -designs: %q is neither %s nor %s\n", d, designNode, designAPI)
			os.Exit(2)
		}
		o.designs = append(o.designs, d)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "apiload:", err)
		os.Exit(1)
	}
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want a positive pod count", f)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("%q: sizes grow (the Deployment is scaled up)", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func run(ctx context.Context, o options) error {
	tmp, err := os.MkdirTemp("", "apiload-")
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
	var rows []row
	for _, d := range o.designs {
		rs, err := measureDesign(ctx, o, d, tmp)
		rows = append(rows, rs...)
		if err != nil {
			printTable(rows)
			return fmt.Errorf("design %s: %w", d, err)
		}
	}
	printTable(rows)
	fmt.Printf("\nload at the end: %s\n", benchenv.ReadLoadavg())
	return nil
}

func printTable(rows []row) {
	fmt.Println("| design | pods | all Ready after | pod watches on the API server | requests/s (idle) | requests while scaling | API server CPU (idle) | API server RSS |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %d | %s | %.0f | %.2f | %.0f | %.1f %% | %.0f MB |\n", r.design, r.pods, r.ready.Round(100*time.Millisecond),
			r.watches, r.reqPerSec, r.rampRequests, 100*r.cpuShare, r.rssMB)
	}
}

package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/podgate/podgate/lab/kubelab"
	"github.com/podgate/podgate/lab/labrun"
	"github.com/podgate/podgate/lab/scenario"
)

func init() { register(newLabCmd) }

func newLabCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Run scenario files: manifests, load, timed steps and expectations",
	}
	cmd.AddCommand(newLabRunCmd())
	return cmd
}

// newLabRunCmd is long because its help text is: the two worlds (podgate
// run and --knative) and the exit status are one page of --help.
func newLabRunCmd() *cobra.Command {
	var (
		cfg      labrun.Config
		world    string
		quiet    bool
		knative  bool
		kcfg     labrun.KnativeConfig
		sidecars []string
		paths    []string
		replicas []int
	)
	cmd := &cobra.Command{
		Use:   "run FILE... [--record-dir DIR] [--svg-dir DIR] [--parallel N]",
		Short: "Run scenario files under podgate run and judge each: a recording, a picture and a verdict",
		Long: `Run each scenario file (apiVersion podgate.dev/v1alpha1, kind Scenario):
its manifests under podgate run, load through the front door, its steps in
order, then its expectations judged. For each it prints the timeline table
of the run (--quiet leaves it out), where the recording (NAME.jsonl) and
the picture (NAME.svg) went, and PASS or FAIL per step, stop and
expectation. Every file is checked before anything runs.

With --knative, each file runs on real Knative Serving instead: one
podgate cluster up --knative per queue sidecar (--queue-proxy gate,knative,
side by side, each its own pod range from --knative-pod-cidr), every
scenario for each sidecar × path (--path activator: Knative's activator
always in the request path; ingress: the ingress sends to the pods once
they are ready) × pod count (the scenario's replicas, or --replicas), each
in a namespace of its own, load through Knative's ingress. Each run leaves
SCENARIO.SIDECAR.PATH.rN.jsonl and .svg; at the end a table per scenario:
requests sent, 200, failed by status, requests the pod made unready
answered from 1 s after the toggle until it was toggled back, and the
verdict. The knative sidecar's runs are the comparison, expected to fail
where Knative is broken: with --knative the exit status is the gate's
runs' alone.

Exit status: 0 every scenario passed (with --knative: every run with the
gate), 1 a file is invalid (each problem with its field path) or a
scenario failed, 2 usage error. See docs/timeline.md#scenarios.`,
		Example: `  podgate lab run examples/scenarios/seed-004-liveness-restart.yaml
  podgate lab run examples/scenarios/*.yaml --quiet --parallel 4 --record-dir /tmp/lab
  podgate timeline seed-004-liveness-restart.jsonl --format html -o run.html`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if world != "local" {
				return usageErrorf("--world %q: only local (podgate run) is supported", world)
			}
			if !knative && (cmd.Flags().Changed("queue-proxy") || cmd.Flags().Changed("path") || cmd.Flags().Changed("replicas")) {
				return usageErrorf("--queue-proxy, --path and --replicas go with --knative")
			}
			scenarios, err := scenario.ReadAll(args)
			if err != nil {
				return invalidf("%v", err)
			}
			if cfg.Binary, err = os.Executable(); err != nil {
				return invalidf("finding podgate itself: %v", err)
			}
			ctx, stop := signal.NotifyContext(contextOf(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if knative {
				kcfg.Binary, kcfg.RecordDir, kcfg.SVGDir, kcfg.Parallel, kcfg.Out = cfg.Binary, cfg.RecordDir, cfg.SVGDir, cfg.Parallel, cmd.OutOrStdout()
				return runKnative(ctx, cmd, kcfg, sidecars, paths, replicas, scenarios)
			}
			cfg.Table, cfg.Out = !quiet, cmd.OutOrStdout()
			results, err := labrun.Run(ctx, cfg, scenarios)
			if err != nil {
				return invalidf("%v", err)
			}
			summary, ok := labrun.Summary(results)
			fmt.Fprint(cmd.OutOrStdout(), summary)
			if !ok {
				return withCode(exitInvalid)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.RecordDir, "record-dir", ".", "write each scenario's recording (NAME.jsonl) here, and podgate's output (NAME.log) when it failed")
	f.StringVar(&cfg.SVGDir, "svg-dir", "", "write each scenario's picture (NAME.svg) here (default: --record-dir)")
	f.IntVar(&cfg.Parallel, "parallel", 1, "run this many scenarios at once")
	f.StringVar(&cfg.PodCIDR, "pod-cidr", labrun.DefaultPodCIDR, "the first scenario's pod range (inside 127.0.0.0/8); each next scenario takes the next range of its size")
	f.StringVar(&world, "world", "local", "where the scenarios run: local (podgate run)")
	f.BoolVarP(&quiet, "quiet", "q", false, "leave out the timeline tables")
	knativeFlags(f, &knative, &kcfg, &sidecars, &paths, &replicas)
	return cmd
}

// runKnative is `podgate lab run --knative`: the runs, the table, and an
// exit status of the gate's runs alone.
func runKnative(ctx context.Context, cmd *cobra.Command, kcfg labrun.KnativeConfig, sidecars, paths []string, replicas []int, scenarios []*scenario.Scenario) error {
	kcfg.Sidecars, kcfg.Replicas = sidecars, replicas
	for _, p := range paths {
		kcfg.Paths = append(kcfg.Paths, kubelab.Path(p))
	}
	runs, err := labrun.RunKnative(ctx, kcfg, scenarios)
	if err != nil {
		return invalidf("%v", err)
	}
	fmt.Fprint(cmd.OutOrStdout(), labrun.Table(runs, false))
	if !labrun.GatePassed(runs) {
		return withCode(exitInvalid)
	}
	return nil
}

// knativeFlags are the flags of `podgate lab run --knative`.
func knativeFlags(f *pflag.FlagSet, knative *bool, kcfg *labrun.KnativeConfig, sidecars, paths *[]string, replicas *[]int) {
	f.BoolVar(knative, "knative", false, "run on real Knative Serving (podgate cluster up --knative; needs root) and print the comparison table")
	f.StringSliceVar(sidecars, "queue-proxy", []string{labrun.SidecarGate, labrun.SidecarKnative}, "with --knative: the queue sidecars, one cluster each (gate, knative)")
	f.StringSliceVar(paths, "path", []string{string(kubelab.ThroughActivator), string(kubelab.ThroughIngress)}, "with --knative: the request paths (activator: target-burst-capacity -1; ingress: 0)")
	f.IntSliceVar(replicas, "replicas", nil, "with --knative: run each scenario with each of these pod counts (default: the scenario's replicas, or 1)")
	f.StringVar(&kcfg.PodCIDR, "knative-pod-cidr", labrun.DefaultKnativePodCIDR, "with --knative: the first cluster's pod range (outside 127.0.0.0/8); the next sidecar's cluster takes the next range")
}

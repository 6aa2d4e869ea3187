package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

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

func newLabRunCmd() *cobra.Command {
	var (
		cfg   labrun.Config
		world string
		quiet bool
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

Exit status: 0 every scenario passed, 1 a file is invalid (each problem
with its field path) or a scenario failed, 2 usage error. See
docs/timeline.md#scenarios.`,
		Example: `  podgate lab run examples/scenarios/seed-004-liveness-restart.yaml
  podgate lab run examples/scenarios/*.yaml --quiet --parallel 4 --record-dir /tmp/lab
  podgate timeline seed-004-liveness-restart.jsonl --format html -o run.html`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if world != "local" {
				return usageErrorf("--world %q: only local (podgate run) is supported", world)
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
	return cmd
}

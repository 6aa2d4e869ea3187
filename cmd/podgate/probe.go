package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/podgate/podgate/probe"
	"github.com/podgate/podgate/probe/prober"
)

func init() { register(newProbeCmd) }

// exitProbeErrored is the exit code when the probe could not be carried out:
// the kubelet would drop such a result and leave the container's state as
// it was, which is neither success nor failure.
const exitProbeErrored = 3

func newProbeCmd() *cobra.Command {
	var (
		file   string
		host   string
		ports  []string
		env    []string
		output string
	)
	cmd := &cobra.Command{
		Use:   "probe -f PROBE.yaml [--host IP]",
		Short: "Run one probe against a pod IP and print what the kubelet would conclude",
		Long: `Run one probe — a corev1.Probe written as YAML or JSON — exactly as the kubelet
would in one tick (including its retry of attempts that errored), and print
the result, the message the kubelet would record, and how long it took.

Exit status: 0 success or warning, 1 failure or invalid probe, 2 usage error,
3 the probe errored (the kubelet would drop the result).`,
		Example: `  podgate probe -f readiness.yaml --host 127.0.0.1
  echo 'httpGet: {port: http, path: /readyz}' | podgate probe -f - --port http=8080
  podgate probe -f liveness.json --env FILE=/tmp/healthy -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usageErrorf("-f is required (a probe file, or - for standard input)")
			}
			if output != "text" && output != "json" {
				return usageErrorf("-o %q: must be text or json", output)
			}
			target, err := probe.ParseTarget(host, ports, env)
			if err != nil {
				return usageErrorf("%v", err)
			}
			p, err := prober.ReadSnippet(cmd.InOrStdin(), file)
			if err != nil {
				return invalidf("%v", err)
			}

			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			out := probe.NewRunner().Run(ctx, p, target)
			if err := probe.WriteReport(cmd.OutOrStdout(), output, out); err != nil {
				return err
			}
			switch out.Result {
			case probe.Success, probe.Warning:
				return nil
			case probe.Failure:
				return withCode(exitInvalid)
			default:
				return withCode(exitProbeErrored)
			}
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "", "probe as YAML or JSON (a corev1.Probe); - reads standard input")
	f.StringVar(&host, "host", "127.0.0.1", "the pod IP the probe is aimed at")
	f.StringArrayVar(&ports, "port", nil, "a container port NAME=NUMBER for named-port resolution (repeatable)")
	f.StringArrayVar(&env, "env", nil, "a container env var NAME=VALUE for $(VAR) expansion in exec probes (repeatable)")
	f.StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// Command podgate-gate is the gate alone: `podgate gate` and `podgate gate
// wait` in a binary that links nothing else of podgate. The gate runs in
// every pod, so what it links is memory on every pod: the one `podgate`
// binary also carries the node agent, the webhook, the control plane
// tools and their Kubernetes libraries, whose package initialisers run in
// any subcommand (docs/benchmarks.md measures both). The gate's image
// (ghcr.io/podgate/podgate-gate) ships this binary at /podgate, its
// entrypoint, as podgate's image ships podgate: the injected gate
// (`args: [gate]`), its startup probe (`/podgate gate wait`) and
// Knative's bare entrypoint run either image alike.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/podgate/podgate/gate/gatecli"
	"github.com/podgate/podgate/internal/command"
	"github.com/podgate/podgate/internal/versioninfo"
)

// version is set at link time, as podgate's is
// (-ldflags "-X main.version=v1.2.3").
var version = ""

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "podgate",
		Short: "The podgate gate sidecar alone (podgate-gate)",
		Long: `podgate-gate is the gate of podgate without the rest: run it as "podgate gate",
or with no arguments in queue-proxy's environment (Knative's queue sidecar).`,
		Version: versioninfo.Version(version),
		Args:    cobra.NoArgs,
		RunE:    gatecli.RunBare,
	}
	root.SetVersionTemplate("podgate-gate {{.Version}}\n")
	command.Prepare(root)
	root.AddCommand(gatecli.Command(), &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "podgate-gate %s\n", versioninfo.Version(version))
			return nil
		},
	})
	return root
}

func runIO(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return command.Execute(newRootCmd(), args, stdin, stdout, stderr)
}

func main() { os.Exit(runIO(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

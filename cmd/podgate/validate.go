package main

import (
	"github.com/spf13/cobra"

	"github.com/podgate/podgate/admission/validation"
	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/local/preflight"
	"github.com/podgate/podgate/node/images"
)

func init() { register(newValidateCmd) }

func newValidateCmd() *cobra.Command {
	var mf manifestFlags
	var output string
	cmd := &cobra.Command{
		Use:   "validate -f FILE|DIR|-...",
		Short: "Check Pod, Deployment and Knative Service manifests as admission would",
		Long: `Check manifests the way the API server and Knative's webhook would, with
podgate's own rules on top (see docs/admission.md). Decoding is strict: an
unknown or duplicate field is an error. Every problem is reported at once,
one line each:

  FILE: doc N: Kind/name: field.path: message

-f takes a file, a directory (its *.yaml, *.yml and *.json files; -R for
subdirectories too) or - for standard input, as kubectl does.

Warnings (on standard error; they do not change the exit status) name what
Kubernetes accepts but podgate treats differently, such as a container
without a command whose image 'podgate run' has no local program for.

Exit status: 0 valid, 1 invalid, 2 usage error.`,
		Example: `  podgate validate -f examples/hello.yaml
  podgate validate -f examples/
  podgate inject -f app.yaml | podgate validate -f -`,
		// Extra arguments are more files, so `-f examples/*.yaml` works as
		// the shell expands it.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return usageErrorf("-o %q: want text or json", output)
			}
			inputs, err := mf.inputs(args, cmd.InOrStdin())
			if err != nil {
				return err
			}
			m, problems, err := validation.LoadInputs(inputs...)
			if err != nil {
				return invalidf("%v", err)
			}
			im, err := images.Default()
			if err != nil {
				return invalidf("%v", err)
			}
			r := validation.Report{Manifests: m, Problems: problems,
				MoreWarnings: func(w *workload.Workload) []string { return preflight.Warnings(w, im) }}
			if output == "json" {
				if err := r.WriteJSON(cmd.OutOrStdout()); err != nil {
					return err
				}
			} else {
				r.WriteText(cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			if len(problems) > 0 {
				return withCode(exitInvalid)
			}
			return nil
		},
	}
	mf.bind(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/podgate/podgate/podspec"
	"github.com/podgate/podgate/runtime/images"
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
			m, problems, err := loadAndValidate(inputs)
			if err != nil {
				return invalidf("%v", err)
			}
			im, err := images.Default()
			if err != nil {
				return invalidf("%v", err)
			}
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if output == "json" {
				if err := writeValidateJSON(out, m, problems, im); err != nil {
					return err
				}
			} else {
				writeValidateText(out, errOut, m, problems, im)
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

// workloadWarnings are podspec's warnings plus what keeps a container from
// running locally though Kubernetes would run it.
func workloadWarnings(w *podspec.Workload, im images.Map) []string {
	return append(w.Warnings(), images.LocalWarnings(w, im)...)
}

func writeValidateText(out, errOut io.Writer, m *podspec.Manifests, problems podspec.Problems, im images.Map) {
	for _, p := range problems {
		fmt.Fprintln(out, p.Error())
	}
	for _, s := range m.Skipped {
		fmt.Fprintf(errOut, "note: %s: %s %s/%s: skipped, podgate runs Pods, Deployments and Knative Services\n",
			s.Source, s.APIVersion, s.Kind, s.Name)
	}
	for _, w := range m.Workloads {
		for _, warn := range workloadWarnings(w, im) {
			fmt.Fprintf(errOut, "warning: %s: %s: %s\n", w.Source, w.ID(), warn)
		}
	}
	if len(problems) == 0 {
		for _, w := range m.Workloads {
			fmt.Fprintf(out, "%s: %s: valid (serving container %s, port %d)\n", w.Source, w.ID(), w.ServingContainer, w.ServingPort)
		}
	}
}

// validateReport is the -o json document.
type validateReport struct {
	Valid     bool              `json:"valid"`
	Problems  podspec.Problems  `json:"problems"`
	Workloads []workloadSummary `json:"workloads"`
	Skipped   []skippedSummary  `json:"skipped"`
	Warnings  []warningSummary  `json:"warnings"`
}

type workloadSummary struct {
	File             string `json:"file"`
	Doc              int    `json:"doc"`
	APIVersion       string `json:"apiVersion"`
	Kind             string `json:"kind"`
	Namespace        string `json:"namespace"`
	Name             string `json:"name"`
	Replicas         int32  `json:"replicas"`
	ServingContainer string `json:"servingContainer"`
	ServingPort      int32  `json:"servingPort"`
}

type skippedSummary struct {
	File       string `json:"file"`
	Doc        int    `json:"doc"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
}

type warningSummary struct {
	File    string `json:"file"`
	Doc     int    `json:"doc"`
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Message string `json:"message"`
}

func writeValidateJSON(out io.Writer, m *podspec.Manifests, problems podspec.Problems, im images.Map) error {
	r := validateReport{
		Valid:     len(problems) == 0,
		Problems:  problems,
		Workloads: []workloadSummary{},
		Skipped:   []skippedSummary{},
		Warnings:  []warningSummary{},
	}
	if r.Problems == nil {
		r.Problems = podspec.Problems{}
	}
	for _, w := range m.Workloads {
		r.Workloads = append(r.Workloads, workloadSummary{
			File: w.Source.File, Doc: w.Source.Doc, APIVersion: w.APIVersion, Kind: w.Kind,
			Namespace: w.Namespace, Name: w.Name, Replicas: w.Replicas,
			ServingContainer: w.ServingContainer, ServingPort: w.ServingPort,
		})
		for _, warn := range workloadWarnings(w, im) {
			r.Warnings = append(r.Warnings, warningSummary{
				File: w.Source.File, Doc: w.Source.Doc, Kind: w.Kind, Name: w.Name, Message: warn,
			})
		}
	}
	for _, s := range m.Skipped {
		r.Skipped = append(r.Skipped, skippedSummary{
			File: s.Source.File, Doc: s.Source.Doc, APIVersion: s.APIVersion, Kind: s.Kind, Name: s.Name,
		})
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

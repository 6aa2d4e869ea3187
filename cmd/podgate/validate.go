package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/podgate/podgate/podspec"
)

func init() { register(newValidateCmd) }

func newValidateCmd() *cobra.Command {
	var files []string
	var output string
	cmd := &cobra.Command{
		Use:   "validate -f FILE...",
		Short: "Check Pod, Deployment and Knative Service manifests as admission would",
		Long: `Check manifests the way the API server and Knative's webhook would, with
podgate's own rules on top (see docs/admission.md). Decoding is strict: an
unknown or duplicate field is an error. Every problem is reported at once,
one line each:

  FILE: doc N: Kind/name: field.path: message

Exit status: 0 valid, 1 invalid, 2 usage error.`,
		// Extra arguments are more files, so `-f examples/*.yaml` works as
		// the shell expands it.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			files = append(files, args...)
			if len(files) == 0 {
				return usageErrorf("at least one -f FILE is required")
			}
			if output != "text" && output != "json" {
				return usageErrorf("-o %q: want text or json", output)
			}
			m, problems, err := loadAndValidate(files)
			if err != nil {
				return invalidf("%v", err)
			}
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if output == "json" {
				if err := writeValidateJSON(out, m, problems); err != nil {
					return err
				}
			} else {
				writeValidateText(out, errOut, m, problems)
			}
			if len(problems) > 0 {
				return withCode(exitInvalid)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "manifest file (YAML or JSON); repeat for more")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// loadAndValidate loads the files and validates every workload in them.
// Problems come sorted by file and document. The error is for files that
// cannot be read at all.
func loadAndValidate(files []string) (*podspec.Manifests, podspec.Problems, error) {
	m, err := podspec.LoadFiles(files...)
	var problems podspec.Problems
	if err != nil && !errors.As(err, &problems) {
		return nil, nil, err
	}
	for _, w := range m.Workloads {
		problems = append(problems, w.Problems(podspec.Validate(w))...)
	}
	podspec.SortProblems(problems, files...)
	return m, problems, nil
}

func writeValidateText(out, errOut io.Writer, m *podspec.Manifests, problems podspec.Problems) {
	for _, p := range problems {
		fmt.Fprintln(out, p.Error())
	}
	for _, s := range m.Skipped {
		fmt.Fprintf(errOut, "note: %s: %s %s/%s: skipped, podgate runs Pods, Deployments and Knative Services\n",
			s.Source, s.APIVersion, s.Kind, s.Name)
	}
	for _, w := range m.Workloads {
		for _, warn := range w.Warnings() {
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

func writeValidateJSON(out io.Writer, m *podspec.Manifests, problems podspec.Problems) error {
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
		for _, warn := range w.Warnings() {
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

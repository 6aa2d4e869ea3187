package validation

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/podgate/podgate/admission/workload"
)

// LoadInputs loads the sources and validates every workload in them, as
// `podgate validate`, `inject` and `run` do. Problems of loading and of
// validation come together, sorted by source and document. The error is
// for sources that cannot be read at all.
func LoadInputs(inputs ...workload.Input) (*workload.Manifests, workload.Problems, error) {
	m, err := workload.LoadInputs(inputs...)
	var problems workload.Problems
	if err != nil && !errors.As(err, &problems) {
		return nil, nil, err
	}
	for _, w := range m.Workloads {
		problems = append(problems, w.Problems(Validate(w))...)
	}
	names := make([]string, len(inputs))
	for i, in := range inputs {
		names[i] = in.Name
	}
	workload.SortProblems(problems, names...)
	return m, problems, nil
}

// Report is what `podgate validate` says about manifests: their problems,
// the valid workloads, the objects skipped and the warnings.
type Report struct {
	Manifests *workload.Manifests
	Problems  workload.Problems
	// MoreWarnings, if set, adds to a workload's own warnings
	// (workload.Workload.Warnings): what Kubernetes would run but podgate
	// cannot run here as written.
	MoreWarnings func(*workload.Workload) []string
}

func (r Report) warnings(w *workload.Workload) []string {
	out := w.Warnings()
	if r.MoreWarnings != nil {
		out = append(out, r.MoreWarnings(w)...)
	}
	return out
}

// WriteText writes one line per problem to out, notes and warnings to
// errOut, and, when there is no problem, one line per valid workload to
// out.
func (r Report) WriteText(out, errOut io.Writer) {
	for _, p := range r.Problems {
		fmt.Fprintln(out, p.Error())
	}
	for _, s := range r.Manifests.Skipped {
		fmt.Fprintf(errOut, "note: %s: %s %s/%s: skipped, podgate runs Pods, Deployments and Knative Services\n",
			s.Source, s.APIVersion, s.Kind, s.Name)
	}
	for _, w := range r.Manifests.Workloads {
		for _, warn := range r.warnings(w) {
			fmt.Fprintf(errOut, "warning: %s: %s: %s\n", w.Source, w.ID(), warn)
		}
	}
	if len(r.Problems) == 0 {
		for _, w := range r.Manifests.Workloads {
			fmt.Fprintf(out, "%s: %s: valid (serving container %s, port %d)\n", w.Source, w.ID(), w.ServingContainer, w.ServingPort)
		}
	}
}

// jsonReport is the -o json document.
type jsonReport struct {
	Valid     bool              `json:"valid"`
	Problems  workload.Problems `json:"problems"`
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

// WriteJSON writes the report as one indented JSON document; every list
// is there, empty rather than null.
func (r Report) WriteJSON(out io.Writer) error {
	rep := jsonReport{
		Valid:     len(r.Problems) == 0,
		Problems:  r.Problems,
		Workloads: []workloadSummary{},
		Skipped:   []skippedSummary{},
		Warnings:  []warningSummary{},
	}
	if rep.Problems == nil {
		rep.Problems = workload.Problems{}
	}
	for _, w := range r.Manifests.Workloads {
		rep.Workloads = append(rep.Workloads, workloadSummary{
			File: w.Source.File, Doc: w.Source.Doc, APIVersion: w.APIVersion, Kind: w.Kind,
			Namespace: w.Namespace, Name: w.Name, Replicas: w.Replicas,
			ServingContainer: w.ServingContainer, ServingPort: w.ServingPort,
		})
		for _, warn := range r.warnings(w) {
			rep.Warnings = append(rep.Warnings, warningSummary{
				File: w.Source.File, Doc: w.Source.Doc, Kind: w.Kind, Name: w.Name, Message: warn,
			})
		}
	}
	for _, s := range r.Manifests.Skipped {
		rep.Skipped = append(rep.Skipped, skippedSummary{
			File: s.Source.File, Doc: s.Source.Doc, APIVersion: s.APIVersion, Kind: s.Kind, Name: s.Name,
		})
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

package local

import (
	"errors"
	"fmt"
	"io"

	"github.com/podgate/podgate/admission/validation"
	"github.com/podgate/podgate/admission/workload"
)

// LoadWorkloads reads what `podgate run` runs: the Pods, Deployments and
// Knative Services of inputs, loaded and validated as `podgate validate`
// does. Every problem is written to w, one a line, and makes the error
// (nothing is to start); other objects (a ConfigMap, a Kubernetes
// Service) are noted on w as skipped.
func LoadWorkloads(inputs []workload.Input, w io.Writer) ([]*workload.Workload, error) {
	m, problems, err := validation.LoadInputs(inputs...)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(w, p.Error())
		}
		return nil, fmt.Errorf("%d problem(s) in the manifests; nothing was started (see podgate validate)", len(problems))
	}
	if len(m.Workloads) == 0 {
		return nil, errors.New("no Pod, Deployment or Knative Service in " + workload.InputNames(inputs))
	}
	for _, s := range m.Skipped {
		fmt.Fprintf(w, "note: %s: %s %s/%s: skipped, podgate runs Pods, Deployments and Knative Services\n",
			s.Source, s.APIVersion, s.Kind, s.Name)
	}
	return m.Workloads, nil
}

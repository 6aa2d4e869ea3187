package validation

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podgate/podgate/admission/workload"
)

const reportManifests = `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: app
    image: img
    ports: [{containerPort: 8080}]
    livenessProbe: {exec: {command: [cat, /healthy]}}
`

// loadReport writes the manifests to a file and loads it as `podgate
// validate -f` does.
func loadReport(t *testing.T, manifests string) Report {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(path, []byte(manifests), 0o644); err != nil {
		t.Fatal(err)
	}
	m, problems, err := LoadInputs(workload.FileInput(path))
	if err != nil {
		t.Fatal(err)
	}
	return Report{Manifests: m, Problems: problems,
		MoreWarnings: func(w *workload.Workload) []string { return []string{"local: " + w.Name} }}
}

func TestReportOfValidManifests(t *testing.T) {
	t.Parallel()
	r := loadReport(t, reportManifests)
	var out, errOut strings.Builder
	r.WriteText(&out, &errOut)
	if got := out.String(); !strings.HasSuffix(got, ": Pod/web: valid (serving container app, port 8080)\n") || strings.Count(got, "\n") != 1 {
		t.Errorf("stdout = %q, want one line for the valid Pod", got)
	}
	for _, want := range []string{
		": v1 ConfigMap/settings: skipped, podgate runs Pods, Deployments and Knative Services\n",
		": Pod/web: spec.containers[0].livenessProbe: exec probes stay with the kubelet/node agent",
		": Pod/web: local: web\n",
	} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr %q lacks %q", errOut.String(), want)
		}
	}
	var js strings.Builder
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Valid     bool              `json:"valid"`
		Problems  []json.RawMessage `json:"problems"`
		Workloads []struct{ Name string }
		Skipped   []struct{ Kind string }
		Warnings  []struct{ Message string }
	}
	if err := json.Unmarshal([]byte(js.String()), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Valid || rep.Problems == nil || len(rep.Problems) != 0 || len(rep.Workloads) != 1 || len(rep.Skipped) != 1 ||
		rep.Skipped[0].Kind != "ConfigMap" || len(rep.Warnings) != 2 || rep.Warnings[1].Message != "local: web" {
		t.Errorf("report %s", js.String())
	}
}

func TestReportOfInvalidManifestsListsProblemsOnly(t *testing.T) {
	t.Parallel()
	r := loadReport(t, strings.Replace(reportManifests, "containerPort: 8080", "containerPort: 0", 1))
	var out strings.Builder
	r.WriteText(&out, io.Discard)
	if got := out.String(); !strings.Contains(got, "Pod/web: spec.containers[0].ports[0].containerPort: Invalid value: 0") || strings.Contains(got, "valid (") {
		t.Errorf("stdout = %q, want the problem and no valid line", got)
	}
}

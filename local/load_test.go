package local

import (
	"io"
	"strings"
	"testing"

	"github.com/podgate/podgate/admission/workload"
)

func TestLoadWorkloadsRefusesProblemsAndNotesWhatItSkips(t *testing.T) {
	const pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: app, image: img, command: [/bin/app]}]\n"
	const configMap = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n"
	input := func(name, content string) workload.Input {
		return workload.Input{Name: name, Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(content)), nil }}
	}
	for _, tc := range []struct {
		name      string
		inputs    []workload.Input
		wantNames []string
		wantOut   string
		wantErr   string
	}{
		{"a pod, and a ConfigMap noted as skipped", []workload.Input{input("a.yaml", pod+"---\n"+configMap)}, []string{"web"},
			"note: a.yaml: doc 2: v1 ConfigMap/settings: skipped", ""},
		{"a problem is written and nothing loads", []workload.Input{input("b.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: []}\n")}, nil,
			"b.yaml: doc 1: Pod/x: spec.containers: Required value", "1 problem(s) in the manifests; nothing was started"},
		{"no workload at all names the inputs", []workload.Input{input("c.yaml", configMap), input("d.yaml", configMap)}, nil,
			"", "no Pod, Deployment or Knative Service in c.yaml, d.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			ws, err := LoadWorkloads(tc.inputs, &out)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("LoadWorkloads: %v, want an error containing %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, w := range ws {
				names = append(names, w.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.wantNames, ",") {
				t.Errorf("workloads %v, want %v", names, tc.wantNames)
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("written %q, want it to contain %q", out.String(), tc.wantOut)
			}
		})
	}
}

//go:build knativeseeds

// Not in the default test run yet: under the whole suite's load on 2
// cores one run in about three lost a request (one 502 "EOF" through the
// ingress as a sidecar turned unready; never alone, 0 of 8 in a row).
// Run it with: go test -tags knativeseeds ./lab/labrun -run TestTheSeedScenariosOnKnativeWithTheGate

package labrun

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/podgate/podgate/lab/kubelab"
	"github.com/podgate/podgate/lab/scenario"
)

// Every seed scenario on real Knative Serving (podgate cluster up
// --knative) with the gate as every revision's queue sidecar, through
// both request paths — the activator always in it (target-burst-capacity
// -1) and the ingress straight to the pods (0) — all in one cluster, in
// parallel namespaces: every gate verdict must pass. Knative's own
// queue-proxy is the comparison (`go run ./test/knativeseeds`), not a
// test: it fails where Knative is broken.
func TestTheSeedScenariosOnKnativeWithTheGate(t *testing.T) {
	scenarios, err := scenario.ReadAll(scenarioFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var out bytes.Buffer
	began := time.Now()
	runs, err := RunKnative(t.Context(), KnativeConfig{
		Binary: podgateBin, RecordDir: dir, ClusterDir: filepath.Join(dir, "clusters"), Sidecars: []string{SidecarGate},
		Paths: []kubelab.Path{kubelab.ThroughActivator, kubelab.ThroughIngress}, PodCIDR: "10.252.40.0/24",
		Parallel: 6, Out: &out,
	}, scenarios)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d runs on one Knative cluster (the gate), cluster start included: %s\n%s", len(runs), time.Since(began).Round(time.Second), Table(runs, false))
	for _, r := range runs {
		t.Run(r.Scenario.Name+"/"+string(r.Path), func(t *testing.T) {
			if r.NotRun != "" {
				t.Skipf("not run on Knative: %s", r.NotRun)
			}
			if !r.Passed() {
				t.Errorf("FAIL:\n%s", r.Report)
			}
			if r.Recording != "" {
				checkPicture(t, r.Picture)
			}
		})
	}
}

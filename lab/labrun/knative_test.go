package labrun

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
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
	// Kept when the test fails: the recordings, pictures and logs explain
	// it, and a loaded CI machine may not fail the same way twice.
	dir, err := os.MkdirTemp("", "podgate-knative-seeds-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the runs' recordings, pictures and logs are kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
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
				t.Errorf("FAIL:\n%s%s", r.Report, failureExcerpt(r.Result))
			}
			if r.Recording != "" {
				checkPicture(t, r.Picture)
			}
		})
	}
}

// failureExcerpt is what a failed run's log says went wrong: its warning
// and error lines but the expected ones (the gate's failed proxying, the
// activator's), so a CI log explains a failure the machine may not
// repeat.
func failureExcerpt(res *Result) string {
	for _, v := range res.Verdicts {
		path, ok := strings.CutPrefix(v.Detail, "in ")
		if v.Rule != "podgate's output" || !ok {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "\n(the run's log: " + err.Error() + ")"
		}
		var out strings.Builder
		out.WriteString("\nwarnings and errors in " + path + ":\n")
		n := 0
		for _, l := range strings.Split(string(b), "\n") {
			if noise(l) {
				continue
			}
			lower := strings.ToLower(l)
			if strings.Contains(l, "WARN") || strings.Contains(l, "ERROR") || strings.Contains(lower, `"level":"error"`) || strings.Contains(lower, `"severity":"error"`) {
				if n++; n > 80 {
					out.WriteString("…\n")
					break
				}
				out.WriteString(l + "\n")
			}
		}
		return out.String()
	}
	return ""
}

// noise is a warning every run has: the events of probes failing as the
// scenario wants, the node's seccomp notice, and Knative's activator
// probing pods that are not ready (with a stack trace each).
func noise(line string) bool {
	for _, n := range []string{"reason=Unhealthy", "reason=SecurityContextNotEnforced", "revision_backends.go"} {
		if strings.Contains(line, n) {
			return true
		}
	}
	return false
}

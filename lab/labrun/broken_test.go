package labrun

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podgate/podgate/internal/brokenbuild"
	"github.com/podgate/podgate/lab/scenario"
)

// notAJudgement are the verdicts that say the run could not be made or
// written, not what podgate did: a scenario failing only on them shows
// nothing about its rules.
var notAJudgement = []string{"prepare", "manifests", "podgate run starts", "recording", "picture", "podgate stopped cleanly"}

// Every shipped scenario fails against a podgate broken on purpose in
// what the scenario is about: rules that pass whatever the gate does
// prove nothing (seed-001-sidecar-turns-unready's noneServed window once
// lasted 28 ms). Each meets the fault that undoes what it is about: a
// gate that says every container is ready, a node that passes every exec
// readiness probe, one that kills before it withdraws the endpoint, one
// that runs no preStop hook (internal/brokenbuild).
func TestTheSeedScenariosFailAgainstABrokenGate(t *testing.T) {
	t.Parallel()
	scenarios, err := scenario.ReadAll(scenarioFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	faultOf := map[string]string{
		// podgate run's activator, the only router, lets the gate drain
		// within milliseconds, before SIGTERM even without the preStop
		// hook that holds it: as on a cluster, the drain waits too.
		"seed-001-delete-under-load":      brokenbuild.NoPreStop + "," + brokenbuild.NoEarlyDrain,
		"seed-001-exec-readiness":         brokenbuild.ExecReadiness,
		"seed-002-sidecar-exec-readiness": brokenbuild.ExecReadiness,
		// The node withdraws the pod before it kills, and the gate does
		// too (its copy of an HTTP liveness probe, the preStop hook that
		// tells it a container goes down): both must be broken.
		"seed-001-sidecar-liveness": brokenbuild.Readiness + "," + brokenbuild.KillFirst,
		"seed-004-liveness-restart": brokenbuild.Readiness + "," + brokenbuild.KillFirst,
	}
	byFault := map[string][]*scenario.Scenario{}
	for _, s := range scenarios {
		f := faultOf[s.Name]
		if f == "" {
			f = brokenbuild.Readiness
		}
		byFault[f] = append(byFault[f], s)
	}
	// Each fault's scenarios on pod ranges of their own, after the seed
	// files' 127.0.20-27.
	first := map[string]string{
		brokenbuild.Readiness: "127.0.30.0/24", brokenbuild.ExecReadiness: "127.0.34.0/24",
		brokenbuild.NoPreStop + "," + brokenbuild.NoEarlyDrain: "127.0.36.0/24", brokenbuild.Readiness + "," + brokenbuild.KillFirst: "127.0.37.0/24",
	}
	var (
		mu      sync.Mutex
		results []*Result
		wg      sync.WaitGroup
	)
	for fault, list := range byFault {
		bin := brokenBinary(t, strings.ReplaceAll(fault, ",", "+"), fault)
		wg.Go(func() {
			rs, err := Run(t.Context(), Config{
				Binary: bin, RecordDir: t.TempDir(), PodCIDR: first[fault], Parallel: len(list),
				// A state that never comes fails its wait in 20 s, not 90.
				MaxStepTimeout: 20 * time.Second,
			}, list)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			results = append(results, rs...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(results) != len(scenarios) {
		t.Fatalf("%d results for %d scenarios", len(results), len(scenarios))
	}
	for _, r := range results {
		t.Run(r.Scenario.Name, func(t *testing.T) {
			var judged []string
			for _, v := range r.Verdicts {
				if !v.Pass && !slices.Contains(notAJudgement, v.Rule) {
					judged = append(judged, v.Rule+": "+v.Detail)
				}
			}
			if len(judged) == 0 {
				t.Errorf("passed its steps and rules against a broken gate:\n%s", r.Report)
				return
			}
			t.Logf("failed, as it should, on:\n  %s", strings.Join(judged, "\n  "))
		})
	}
}

// brokenBinary builds podgate carrying fault (internal/brokenbuild).
func brokenBinary(t *testing.T, name, fault string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "podgate-broken-"+name)
	build := exec.Command("go", "build", "-trimpath", "-tags", "podgate_broken",
		"-ldflags", "-X github.com/podgate/podgate/internal/brokenbuild.faults="+fault,
		"-o", bin, "github.com/podgate/podgate/cmd/podgate")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build a podgate broken in %s: %v\n%s", fault, err, out)
	}
	return bin
}

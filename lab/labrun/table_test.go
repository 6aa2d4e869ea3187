package labrun

import (
	"strings"
	"testing"

	"github.com/podgate/podgate/lab/kubelab"
	"github.com/podgate/podgate/lab/scenario"
)

func knRun(name, sidecar string, path kubelab.Path, pass bool, c Counts) *KnativeRun {
	return &KnativeRun{Sidecar: sidecar, Path: path, Replicas: 1, Counts: c,
		Result: &Result{Scenario: &scenario.Scenario{Name: name}, Verdicts: []Verdict{{Rule: "x", Pass: pass}}}}
}

func TestTableHasOneRowPerRunGroupedByScenario(t *testing.T) {
	runs := []*KnativeRun{
		knRun("seed-a", "gate", kubelab.ThroughActivator, true, Counts{Sent: 10, OK: 10, Failed: map[string]int{}, ToUnready: 0}),
		knRun("seed-a", "knative", kubelab.ThroughActivator, false, Counts{Sent: 10, OK: 6, Failed: map[string]int{"502": 1, "503": 2, "other": 1}, ToUnready: 5}),
		knRun("seed-b", "gate", kubelab.ThroughIngress, true, Counts{Sent: 3, OK: 3, Failed: map[string]int{}, ToUnready: -1}),
	}
	md := Table(runs, true)
	for _, want := range []string{
		"#### seed-a\n\n| sidecar | path | pods | sent | 200 | 502 | 503 | 504 | other | served by the unready pod | verdict |",
		"| gate | activator | 1 | 10 | 10 | 0 | 0 | 0 | 0 | 0 | PASS |",
		"| knative | activator | 1 | 10 | 6 | 1 | 2 | 0 | 1 | 5 | FAIL |",
		"#### seed-b",
		"| gate | ingress | 1 | 3 | 3 | 0 | 0 | 0 | 0 | - | PASS |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	text := Table(runs, false)
	if !strings.Contains(text, "seed-a\n  sidecar") || strings.Count(text, "PASS") != 2 || strings.Count(text, "FAIL") != 1 {
		t.Errorf("text table:\n%s", text)
	}
}

func TestOnlyTheGatesVerdictsDecide(t *testing.T) {
	ok := knRun("s", "gate", kubelab.ThroughActivator, true, Counts{})
	knFail := knRun("s", "knative", kubelab.ThroughActivator, false, Counts{})
	gateFail := knRun("s", "gate", kubelab.ThroughIngress, false, Counts{})
	if !GatePassed([]*KnativeRun{ok, knFail}) {
		t.Error("a failed knative run decided")
	}
	if GatePassed([]*KnativeRun{ok, gateFail}) {
		t.Error("a failed gate run passed")
	}
}

// A scenario whose pods are never ready is not run on Knative (its
// revision is never routed): the table says so, neither PASS nor FAIL,
// and it does not decide the exit status.
func TestAScenarioNotRunOnKnativeIsNeitherPassNorFail(t *testing.T) {
	notRun := knRun("never", "gate", kubelab.ThroughActivator, false, Counts{ToUnready: -1, Failed: map[string]int{}})
	notRun.NotRun = NotRunOnKnative
	notRun.Verdicts = nil
	md := Table([]*KnativeRun{notRun}, true)
	if !strings.Contains(md, "| gate | activator | 1 | 0 | 0 | 0 | 0 | 0 | 0 | - | not run (never ready: Knative answers 404) |") || strings.Contains(md, "PASS") || strings.Contains(md, "FAIL") {
		t.Errorf("table:\n%s", md)
	}
	if !GatePassed([]*KnativeRun{notRun}) {
		t.Error("a scenario not run decided the exit status")
	}
	never := &scenario.Scenario{Steps: []scenario.Step{{Wait: &scenario.Wait{Served: 10}}}}
	ready := &scenario.Scenario{Steps: []scenario.Step{{Wait: &scenario.Wait{PodsReady: 1}}}}
	if !neverReady(never) || neverReady(ready) {
		t.Errorf("neverReady: %t for a scenario not waiting for ready pods, %t for one that does", neverReady(never), neverReady(ready))
	}
}

func TestClusterPodCIDRsAreConsecutiveOutsideLoopback(t *testing.T) {
	got, err := ClusterPodCIDRs("10.252.1.0/24", 2)
	if err != nil || strings.Join(got, ",") != "10.252.1.0/24,10.252.2.0/24" {
		t.Errorf("got %v, %v", got, err)
	}
	for _, bad := range []string{"127.0.200.0/24", "10.252.1.0/8", "x"} {
		if _, err := ClusterPodCIDRs(bad, 2); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if _, err := ClusterPodCIDRs("10.255.255.0/24", 2); err == nil {
		t.Error("ranges beyond 10.0.0.0/8 accepted")
	}
}

package labrun

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// tableHeader are the comparison table's columns.
var tableHeader = []string{"sidecar", "path", "pods", "sent", "200", "502", "503", "504", "other", "served by the unready pod", "verdict"}

// Table is the comparison of the runs, one table per scenario in the
// order first run: as text columns, or as markdown (docs/comparison.md).
func Table(runs []*KnativeRun, markdown bool) string {
	var order []string
	by := map[string][]*KnativeRun{}
	for _, r := range runs {
		if r == nil {
			continue
		}
		n := r.Scenario.Name
		if _, ok := by[n]; !ok {
			order = append(order, n)
		}
		by[n] = append(by[n], r)
	}
	var b strings.Builder
	for _, n := range order {
		if markdown {
			fmt.Fprintf(&b, "#### %s\n\n| %s |\n|%s\n", n, strings.Join(tableHeader, " | "), strings.Repeat("---|", len(tableHeader)))
			for _, r := range by[n] {
				fmt.Fprintf(&b, "| %s |\n", strings.Join(row(r), " | "))
			}
			b.WriteString("\n")
			continue
		}
		fmt.Fprintf(&b, "%s\n", n)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  %s\n", strings.Join(tableHeader, "\t"))
		for _, r := range by[n] {
			fmt.Fprintf(tw, "  %s\n", strings.Join(row(r), "\t"))
		}
		_ = tw.Flush()
		b.WriteString("\n")
	}
	return b.String()
}

func row(r *KnativeRun) []string {
	c := r.Counts
	unready := "-"
	if c.ToUnready >= 0 {
		unready = fmt.Sprint(c.ToUnready)
	}
	verdict := "FAIL"
	switch {
	case r.NotRun != "":
		verdict = "not run (never ready: Knative answers 404)"
	case r.Passed():
		verdict = "PASS"
	}
	return []string{r.Sidecar, string(r.Path), fmt.Sprint(r.Replicas), fmt.Sprint(c.Sent), fmt.Sprint(c.OK),
		fmt.Sprint(c.Failed["502"]), fmt.Sprint(c.Failed["503"]), fmt.Sprint(c.Failed["504"]), fmt.Sprint(c.Failed["other"]), unready, verdict}
}

// GatePassed reports whether every run with the gate as queue sidecar
// passed (a scenario not run on Knative, NotRun, is neither): the
// knative sidecar's runs are the comparison, expected to fail where
// Knative is broken.
func GatePassed(runs []*KnativeRun) bool {
	for _, r := range runs {
		if r == nil || (r.Sidecar == SidecarGate && r.NotRun == "" && !r.Passed()) {
			return false
		}
	}
	return true
}

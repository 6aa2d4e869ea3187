package printers

import (
	"time"

	"github.com/podgate/podgate/local/servingv1"
)

// Services (Knative's) print as `kubectl get ksvc`.
var Services = Resource{
	NameKind:    "service.serving.knative.dev",
	Columns:     []string{"NAME", "URL", "LATESTCREATED", "LATESTREADY", "READY", "REASON"},
	WideColumns: []string{"NAME", "URL", "LATESTCREATED", "LATESTREADY", "READY", "REASON"},
}

// ServiceRow is `kubectl get ksvc`: Knative's printer columns, empty cells
// for fields not set yet.
func ServiceRow(s *servingv1.Service, _ bool, _ time.Time) []string {
	ready, reason := "", ""
	if c := s.Status.Condition("Ready"); c != nil {
		ready, reason = string(c.Status), c.Reason
	}
	return []string{s.Name, s.Status.URL, s.Status.LatestCreatedRevisionName, s.Status.LatestReadyRevisionName, ready, reason}
}

package printers

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/local/servingv1"
)

// ServiceTable is the table the API server serves for Knative Services, a
// custom resource: the name, then the printer columns Knative's
// CustomResourceDefinition declares (`kubectl get ksvc`: URL
// LATESTCREATED LATESTREADY READY REASON; no AGE).
var ServiceTable = TableOf[*servingv1.Service]{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		crdColumn("URL", ".status.url"),
		crdColumn("LatestCreated", ".status.latestCreatedRevisionName"),
		crdColumn("LatestReady", ".status.latestReadyRevisionName"),
		crdColumn("Ready", ".status.conditions[?(@.type=='Ready')].status"),
		crdColumn("Reason", ".status.conditions[?(@.type=='Ready')].reason"),
	},
	Cells: serviceCells,
}

// crdColumn is a string printer column of a CustomResourceDefinition
// without a description: the API server describes it by its path.
func crdColumn(name, jsonPath string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: "string",
		Description: "Custom resource definition column (in JSONPath format): " + jsonPath}
}

// Services (Knative's) print as `kubectl get ksvc`.
var Services = Resource{NameKind: "service.serving.knative.dev", Columns: ServiceTable.Columns}

// ServiceRow is `kubectl get ksvc`'s row.
func ServiceRow(s *servingv1.Service, wide bool, now time.Time) []string {
	return ServiceTable.Row(s, wide, now)
}

// serviceCells are nil (printed empty) where the column's path finds
// nothing, as for any custom resource: the fields are omitted when empty.
func serviceCells(s *servingv1.Service, _ time.Time) []any {
	ready, reason := any(nil), any(nil)
	if c := s.Status.Condition("Ready"); c != nil {
		ready, reason = string(c.Status), orNil(c.Reason)
	}
	return []any{s.Name, orNil(s.Status.URL), orNil(s.Status.LatestCreatedRevisionName), orNil(s.Status.LatestReadyRevisionName), ready, reason}
}

// orNil is a string field with omitempty as a column path reads it:
// absent when empty.
func orNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

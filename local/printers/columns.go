package printers

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TableOf is one resource's table as the API server serves it (a
// meta.k8s.io/v1 Table): its column definitions and, for one object, the
// cells of every column, the -o wide ones (priority 1) included. It is the
// single source of the columns: the control API serves it to kubectl,
// and `podgate get` prints it (Row), so the two cannot disagree.
type TableOf[T runtime.Object] struct {
	Columns []metav1.TableColumnDefinition
	// Cells are one object's cells, one per column: strings, int64 or nil
	// (a missing value, as a custom resource's column path finds none).
	Cells func(obj T, now time.Time) []any
	// Conditions, when set, are the row's conditions (a finished pod's
	// Completed, which clients may use to hide it).
	Conditions func(obj T) []metav1.TableRowCondition
}

// Table is the Table of objs at now, each row's object the object itself
// (the API server then keeps it, keeps its metadata or drops it, as the
// request's includeObject asks). noHeaders leaves the column definitions
// out, as the API server does on every watch event after the first.
func (t TableOf[T]) Table(objs []T, now time.Time, noHeaders bool) *metav1.Table {
	table := &metav1.Table{Rows: make([]metav1.TableRow, 0, len(objs))}
	if !noHeaders {
		table.ColumnDefinitions = t.Columns
	}
	for _, o := range objs {
		row := metav1.TableRow{Cells: t.Cells(o, now), Object: runtime.RawExtension{Object: o}}
		if t.Conditions != nil {
			row.Conditions = t.Conditions(o)
		}
		table.Rows = append(table.Rows, row)
	}
	return table
}

// Row is obj's row as kubectl prints the Table: the columns of priority 0,
// or every column with wide.
func (t TableOf[T]) Row(obj T, wide bool, now time.Time) []string {
	return CellText(t.Columns, t.Cells(obj, now), wide)
}

// Header is the table's header as kubectl prints it: the column names in
// upper case, the wide ones only with wide.
func Header(columns []metav1.TableColumnDefinition, wide bool) []string {
	var out []string
	for _, c := range columns {
		if wide || c.Priority == 0 {
			out = append(out, strings.ToUpper(c.Name))
		}
	}
	return out
}

// CellText is how kubectl prints a row's cells: those of the columns
// shown (priority 0, or all with wide), a missing value as an empty cell,
// anything else as fmt prints it.
func CellText(columns []metav1.TableColumnDefinition, cells []any, wide bool) []string {
	var out []string
	for i, c := range cells {
		if i >= len(columns) {
			// A row with more cells than columns: kubectl stops at the
			// columns, and so does this.
			break
		}
		if !wide && columns[i].Priority != 0 {
			continue
		}
		switch v := c.(type) {
		case nil:
			out = append(out, "")
		case string:
			out = append(out, v)
		default:
			out = append(out, fmt.Sprint(v))
		}
	}
	return out
}

// nameColumn is the object's name, the first column of most tables.
var nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}

// ageColumn is the time since the object was created.
var ageColumn = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}

// Package printers prints Kubernetes objects as kubectl does: the tables
// of `kubectl get` (pods with kubectl's READY/STATUS/RESTARTS rules,
// events folded as `kubectl events` folds them, EndpointSlices, Knative
// Services as `kubectl get ksvc`), -o wide, -o name, and -o json|yaml.
// Its tables are the API server's meta.k8s.io Tables (TableOf): the
// control API serves them to kubectl and `podgate get` prints them, from
// one set of columns. It fetches nothing: callers hand it objects.
package printers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Item is one object ready to print.
type Item struct {
	// Obj is the typed object with apiVersion and kind, for -o json|yaml.
	Obj       any
	Namespace string
	Name      string
	// Row is the object's table row.
	Row func(wide bool, now time.Time) []string
}

// Resource is how one resource type prints.
type Resource struct {
	// NameKind prefixes -o name output: "pod",
	// "endpointslice.discovery.k8s.io".
	NameKind string
	// Columns are the API server's column definitions (a TableOf's), the
	// header's source.
	Columns []metav1.TableColumnDefinition
}

// columns are the header of the table.
func (r Resource) columns(wide bool) []string { return Header(r.Columns, wide) }

// Formats are the -o values a Printer knows; "" is the table.
var Formats = []string{"", "wide", "json", "yaml", "name"}

// Printer writes items in one output format. For tables it keeps the
// column widths it has used, so rows printed by a watch line up with the
// list.
type Printer struct {
	Out           io.Writer
	Resource      Resource
	Format        string // one of Formats
	AllNamespaces bool   // a NAMESPACE column first
	Headers       bool
	Now           func() time.Time // nil: time.Now

	widths        []int
	headerPrinted bool
}

func (p *Printer) clock() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// PrintList prints a list: for json|yaml the list object itself when there
// is one (a list by name is wrapped in a List, as kubectl does).
func (p *Printer) PrintList(list any, items []Item) error {
	switch p.Format {
	case "json", "yaml":
		if list == nil {
			objs := make([]any, len(items))
			for i, it := range items {
				objs[i] = it.Obj
			}
			list = map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": objs}
		}
		return p.encode(list)
	case "name":
		for _, it := range items {
			fmt.Fprintf(p.Out, "%s/%s\n", p.Resource.NameKind, it.Name)
		}
		return nil
	}
	return p.rows(items)
}

// PrintObject prints one object (a watch prints every change this way).
func (p *Printer) PrintObject(it Item) error {
	switch p.Format {
	case "json", "yaml":
		return p.encode(it.Obj)
	case "name":
		fmt.Fprintf(p.Out, "%s/%s\n", p.Resource.NameKind, it.Name)
		return nil
	}
	return p.rows([]Item{it})
}

func (p *Printer) encode(v any) error {
	if p.Format == "yaml" {
		data, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encoding YAML: %w", err)
		}
		if p.headerPrinted {
			// Watching: separate the documents.
			fmt.Fprintln(p.Out, "---")
		}
		p.headerPrinted = true
		_, err = p.Out.Write(data)
		return err
	}
	// Four spaces, as kubectl indents.
	data, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	_, err = fmt.Fprintf(p.Out, "%s\n", data)
	return err
}

func (p *Printer) rows(items []Item) error {
	wide := p.Format == "wide"
	now := p.clock()
	var rows [][]string
	if p.Headers && !p.headerPrinted && len(items) > 0 {
		rows = append(rows, p.withNamespace("NAMESPACE", p.Resource.columns(wide)))
		p.headerPrinted = true
	}
	for _, it := range items {
		cells := it.Row(wide, now)
		for i := range cells {
			cells[i] = escapeCell(cells[i])
		}
		rows = append(rows, p.withNamespace(it.Namespace, cells))
	}
	var buf bytes.Buffer
	writeTable(&buf, rows, &p.widths)
	_, err := p.Out.Write(buf.Bytes())
	return err
}

func (p *Printer) withNamespace(ns string, cells []string) []string {
	if !p.AllNamespaces {
		return cells
	}
	return append([]string{ns}, cells...)
}

package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// WriteYAML writes the workloads' manifests as one YAML stream, documents
// separated by "---", in the order given.
func WriteYAML(out io.Writer, ws []*Workload) error {
	items := make([]any, len(ws))
	for i, w := range ws {
		items[i] = w
	}
	return WriteItems(out, items)
}

// WriteItems writes *Workload and Skipped items (Manifests.InOrder) as one
// YAML stream; skipped objects pass through as they were read.
func WriteItems(out io.Writer, items []any) error {
	for i, it := range items {
		var b []byte
		var err error
		switch v := it.(type) {
		case *Workload:
			b, err = v.YAML()
		case Skipped:
			b, err = yaml.JSONToYAML(v.Raw)
		default:
			err = fmt.Errorf("write manifests: unexpected item %T", it)
		}
		if err != nil {
			return err
		}
		if i > 0 {
			if _, err := io.WriteString(out, "---\n"); err != nil {
				return err
			}
		}
		if _, err := out.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// YAML renders the workload's manifest. Fields the Go types print although
// the manifest never had them (a null creationTimestamp, an empty status)
// are left out, so the output reads like the input.
func (w *Workload) YAML() ([]byte, error) {
	js, err := json.Marshal(w.Object())
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", w.ID(), err)
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("encode %s: %w", w.ID(), err)
	}
	prune(doc)
	if st, ok := doc["status"].(map[string]any); ok && len(st) == 0 {
		delete(doc, "status")
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", w.ID(), err)
	}
	return b, nil
}

// prune drops null creationTimestamps at any depth.
func prune(v any) {
	switch t := v.(type) {
	case map[string]any:
		if ts, ok := t["creationTimestamp"]; ok && ts == nil {
			delete(t, "creationTimestamp")
		}
		for _, c := range t {
			prune(c)
		}
	case []any:
		for _, c := range t {
			prune(c)
		}
	}
}

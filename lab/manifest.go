package lab

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Manifest is a copy of a manifest file with the few changes a scenario
// needs: its own exec file paths, a shorter grace period, a request
// timeout, extra args. Everything else stays as the file says, so a
// scenario run on the copy proves the file works.
type Manifest struct {
	docs []map[string]any
}

// ReadManifest reads a YAML or JSON file of one or more documents. Pairs
// of replace strings (old, new, old, new, …) are replaced in the text
// first: exec probe paths appear both in args and in probes.
func ReadManifest(path string, replace ...string) (*Manifest, error) {
	if len(replace)%2 != 0 {
		return nil, errors.New("lab: ReadManifest: replace takes old, new pairs")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	text := string(data)
	for i := 0; i < len(replace); i += 2 {
		if !strings.Contains(text, replace[i]) {
			return nil, fmt.Errorf("lab: %s does not contain %q", path, replace[i])
		}
		text = strings.ReplaceAll(text, replace[i], replace[i+1])
	}
	m, err := ParseManifest([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("lab: %s: %w", path, err)
	}
	return m, nil
}

// ParseManifest parses YAML or JSON documents.
func ParseManifest(data []byte) (*Manifest, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	m := &Manifest{}
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("document %d: %w", len(m.docs)+1, err)
		}
		if doc != nil {
			m.docs = append(m.docs, doc)
		}
	}
	if len(m.docs) == 0 {
		return nil, errors.New("no documents")
	}
	return m, nil
}

// podSpec is where a document's pod spec lives: spec for a Pod,
// spec.template.spec for a Deployment or a Knative Service (whose
// revision fields, such as timeoutSeconds, live there too).
func podSpec(doc map[string]any) (map[string]any, error) {
	kind, _ := doc["kind"].(string)
	spec, _ := doc["spec"].(map[string]any)
	if spec == nil {
		return nil, fmt.Errorf("%s: no spec", kind)
	}
	if kind == "Pod" {
		return spec, nil
	}
	tmpl, _ := spec["template"].(map[string]any)
	inner, _ := tmpl["spec"].(map[string]any)
	if inner == nil {
		return nil, fmt.Errorf("%s: no spec.template.spec", kind)
	}
	return inner, nil
}

// SetPodSpec sets a field of every document's pod spec, e.g.
// terminationGracePeriodSeconds, or a Knative Service's timeoutSeconds.
func (m *Manifest) SetPodSpec(field string, value any) error {
	for i, doc := range m.docs {
		spec, err := podSpec(doc)
		if err != nil {
			return fmt.Errorf("lab: document %d: %w", i+1, err)
		}
		spec[field] = value
	}
	return nil
}

// AppendArgs appends to the args of every container called name.
func (m *Manifest) AppendArgs(container string, args ...string) error {
	found := false
	for i, doc := range m.docs {
		spec, err := podSpec(doc)
		if err != nil {
			return fmt.Errorf("lab: document %d: %w", i+1, err)
		}
		for _, key := range []string{"containers", "initContainers"} {
			list, _ := spec[key].([]any)
			for _, c := range list {
				cm, _ := c.(map[string]any)
				if cm == nil || cm["name"] != container {
					continue
				}
				have, _ := cm["args"].([]any)
				for _, a := range args {
					have = append(have, a)
				}
				cm["args"] = have
				found = true
			}
		}
	}
	if !found {
		return fmt.Errorf("lab: no container %q in the manifest", container)
	}
	return nil
}

// Bytes is the manifest as YAML documents.
func (m *Manifest) Bytes() ([]byte, error) {
	var b bytes.Buffer
	for i, doc := range m.docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		y, err := yaml.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("lab: document %d: %w", i+1, err)
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}

// Write writes the manifest to dir/name and returns the path.
func (m *Manifest) Write(dir, name string) (string, error) {
	data, err := m.Bytes()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return "", fmt.Errorf("lab: %w", err)
	}
	return p, nil
}

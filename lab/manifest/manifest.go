// Package manifest is the lab's copies of manifest files with the few
// changes a scenario needs (its own exec file paths, a shorter grace
// period, a request timeout, extra args), and their form for a cluster
// without Knative (ForCluster).
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/podgate/podgate/gate/contract"
)

// Manifest is a copy of a manifest file with the few changes a scenario
// needs: its own exec file paths, a shorter grace period, a request
// timeout, extra args. Everything else stays as the file says, so a
// scenario run on the copy proves the file works.
type Manifest struct {
	docs []map[string]any
}

// Read reads a YAML or JSON file of one or more documents. Pairs
// of replace strings (old, new, old, new, …) are replaced in the text
// first: exec probe paths appear both in args and in probes.
func Read(path string, replace ...string) (*Manifest, error) {
	if len(replace)%2 != 0 {
		return nil, errors.New("lab: manifest.Read: replace takes old, new pairs")
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
	m, err := Parse([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("lab: %s: %w", path, err)
	}
	return m, nil
}

// Parse parses YAML or JSON documents.
func Parse(data []byte) (*Manifest, error) {
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

// injectLabel opts a pod (or a workload, for validation) in to podgate's
// webhook: the gate is injected (package webhook).
const injectLabel = "podgate.dev/inject"

// knativeRevisionFields are a Knative Service's revision fields that a
// pod spec does not have.
var knativeRevisionFields = []string{"timeoutSeconds", "containerConcurrency", "responseStartTimeoutSeconds", "idleTimeoutSeconds"}

// ForCluster is the manifest as a cluster without Knative takes it,
// opted in to podgate's gate: each Knative Service NAME becomes a
// Deployment NAME of replicas pods labelled app=NAME and a Service NAME
// selecting them (port 80 to the gate's port, where the activator sends
// requests whatever the Service says); its revision fields
// (timeoutSeconds, …) go, as a pod spec has none. Every pod template,
// Pod and Deployment is labelled podgate.dev/inject=enabled: the pods
// get the gate, the Deployments podgate's validation.
func (m *Manifest) ForCluster(replicas int) (*Manifest, error) {
	out := &Manifest{}
	for i, doc := range m.docs {
		doc, err := deepCopy(doc)
		if err != nil {
			return nil, fmt.Errorf("lab: document %d: %w", i+1, err)
		}
		kind, _ := doc["kind"].(string)
		api, _ := doc["apiVersion"].(string)
		if kind == "Service" && strings.HasPrefix(api, "serving.knative.dev/") {
			dep, svc, err := knativeAsDeployment(doc, replicas)
			if err != nil {
				return nil, fmt.Errorf("lab: document %d: %w", i+1, err)
			}
			out.docs = append(out.docs, dep, svc)
			continue
		}
		switch kind {
		case "Pod":
			setLabel(doc, injectLabel, "enabled")
		case "Deployment":
			setLabel(doc, injectLabel, "enabled")
			spec, _ := doc["spec"].(map[string]any)
			tmpl, _ := spec["template"].(map[string]any)
			setLabel(tmpl, injectLabel, "enabled")
		}
		out.docs = append(out.docs, doc)
	}
	return out, nil
}

// knativeAsDeployment is ForCluster's Deployment and Service for a
// Knative Service.
func knativeAsDeployment(ksvc map[string]any, replicas int) (dep, svc map[string]any, err error) {
	md, _ := ksvc["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	if name == "" {
		return nil, nil, errors.New("a Knative Service without metadata.name")
	}
	podSpec, err := podSpec(ksvc)
	if err != nil {
		return nil, nil, err
	}
	for _, f := range knativeRevisionFields {
		delete(podSpec, f)
	}
	defaultProbePorts(podSpec)
	labels := map[string]any{"app": name, injectLabel: "enabled"}
	dep = map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": name, "labels": labels},
		"spec": map[string]any{
			"replicas": replicas,
			"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"template": map[string]any{"metadata": map[string]any{"labels": labels}, "spec": podSpec},
		},
	}
	svc = map[string]any{
		"apiVersion": "v1",
		"kind":       "Service",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"selector": map[string]any{"app": name},
			"ports":    []any{map[string]any{"name": "http", "port": 80, "targetPort": contract.GatePort}},
		},
	}
	return dep, svc, nil
}

// knativeUserPort is Knative's default user port, the serving
// container's when it declares none.
const knativeUserPort = 8080

// defaultProbePorts gives an HTTP or TCP probe without a port the port
// Knative gives it: its container's (first) containerPort, Knative's
// 8080 without one. A pod spec has no such default.
func defaultProbePorts(podSpec map[string]any) {
	list, _ := podSpec["containers"].([]any)
	for _, c := range list {
		cm, _ := c.(map[string]any)
		if cm == nil {
			continue
		}
		port := any(knativeUserPort)
		if ports, _ := cm["ports"].([]any); len(ports) > 0 {
			if p0, _ := ports[0].(map[string]any); p0 != nil && p0["containerPort"] != nil {
				port = p0["containerPort"]
			}
		}
		for _, key := range []string{"readinessProbe", "livenessProbe", "startupProbe"} {
			probe, _ := cm[key].(map[string]any)
			for _, handler := range []string{"httpGet", "tcpSocket"} {
				if h, _ := probe[handler].(map[string]any); h != nil && (h["port"] == nil || h["port"] == 0.0) {
					h["port"] = port
				}
			}
		}
	}
}

// Services are the names of the manifest's core/v1 Services.
func (m *Manifest) Services() []string {
	var out []string
	for _, doc := range m.docs {
		md, _ := doc["metadata"].(map[string]any)
		if doc["kind"] == "Service" && doc["apiVersion"] == "v1" && md != nil {
			if n, ok := md["name"].(string); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

func setLabel(obj map[string]any, key, value string) {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	labels, _ := md["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		md["labels"] = labels
	}
	labels[key] = value
}

// deepCopy copies a decoded document through JSON.
func deepCopy(doc map[string]any) (map[string]any, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(b, &out)
}

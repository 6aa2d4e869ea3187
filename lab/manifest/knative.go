package manifest

import (
	"fmt"
	"strconv"
	"strings"
)

// Knative's autoscaling annotations on a revision template.
const (
	annotationMinScale      = "autoscaling.knative.dev/min-scale"
	annotationMaxScale      = "autoscaling.knative.dev/max-scale"
	annotationBurstCapacity = "autoscaling.knative.dev/target-burst-capacity"
)

// Knative's request paths: with BurstCapacityActivator (-1) Knative's
// activator stays in the path of every request; with BurstCapacityDirect
// (0) the ingress sends straight to the pods once they are ready (the
// activator only while there are none).
const (
	BurstCapacityActivator = "-1"
	BurstCapacityDirect    = "0"
)

// notInKnative are pod spec fields a scenario may set for `podgate run`
// or a cluster that Knative's webhook refuses in a revision: a
// revision's pods get timeoutSeconds as their grace period.
var notInKnative = []string{"terminationGracePeriodSeconds"}

// ForKnative is the manifest for a cluster with Knative Serving: every
// Knative Service as it is, but scaled to exactly replicas pods (min-scale
// = max-scale) with targetBurstCapacity burst ("-1" or "0", the request
// path), and without the pod spec fields Knative refuses. Other documents
// are left out: the scenario's Knative Services are what it runs.
func (m *Manifest) ForKnative(replicas int, burst string) (*Manifest, error) {
	out := &Manifest{}
	for i, doc := range m.docs {
		api, _ := doc["apiVersion"].(string)
		if doc["kind"] != "Service" || !strings.HasPrefix(api, "serving.knative.dev/") {
			continue
		}
		doc, err := deepCopy(doc)
		if err != nil {
			return nil, fmt.Errorf("lab: document %d: %w", i+1, err)
		}
		spec, err := podSpec(doc)
		if err != nil {
			return nil, fmt.Errorf("lab: document %d: %w", i+1, err)
		}
		for _, f := range notInKnative {
			delete(spec, f)
		}
		tmpl := doc["spec"].(map[string]any)["template"].(map[string]any)
		md, _ := tmpl["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
			tmpl["metadata"] = md
		}
		ann, _ := md["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
			md["annotations"] = ann
		}
		ann[annotationMinScale] = strconv.Itoa(replicas)
		ann[annotationMaxScale] = strconv.Itoa(replicas)
		ann[annotationBurstCapacity] = burst
		out.docs = append(out.docs, doc)
	}
	if len(out.docs) == 0 {
		return nil, fmt.Errorf("lab: no Knative Service in the manifest")
	}
	return out, nil
}

// KnativeServices are the names of the manifest's Knative Services.
func (m *Manifest) KnativeServices() []string {
	var out []string
	for _, doc := range m.docs {
		api, _ := doc["apiVersion"].(string)
		md, _ := doc["metadata"].(map[string]any)
		if doc["kind"] == "Service" && strings.HasPrefix(api, "serving.knative.dev/") && md != nil {
			if n, ok := md["name"].(string); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

package manifest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Knative's autoscaling annotations the lab sets on a revision template.
const (
	MinScaleAnnotation            = "autoscaling.knative.dev/min-scale"
	MaxScaleAnnotation            = "autoscaling.knative.dev/max-scale"
	TargetBurstCapacityAnnotation = "autoscaling.knative.dev/target-burst-capacity"
)

// ForKnative is the manifest as a cluster with Knative Serving takes it:
// every Knative Service stays a Knative Service, its revision template
// pinned to replicas pods (min-scale = max-scale) and given the
// target-burst-capacity burst: -1 keeps Knative's activator in the
// request path always, 0 takes it out once pods are ready (the ingress
// sends to the pods). Other documents are left as they are. It returns
// the Knative Services' names too.
func (m *Manifest) ForKnative(replicas, burst int) (*Manifest, []string, error) {
	if replicas < 1 {
		return nil, nil, fmt.Errorf("lab: ForKnative: replicas %d, want at least 1", replicas)
	}
	if burst != -1 && burst != 0 {
		return nil, nil, fmt.Errorf("lab: ForKnative: target-burst-capacity %d, want -1 or 0", burst)
	}
	out := &Manifest{}
	var names []string
	for i, doc := range m.docs {
		doc, err := deepCopy(doc)
		if err != nil {
			return nil, nil, fmt.Errorf("lab: document %d: %w", i+1, err)
		}
		api, _ := doc["apiVersion"].(string)
		if doc["kind"] == "Service" && strings.HasPrefix(api, "serving.knative.dev/") {
			md, _ := doc["metadata"].(map[string]any)
			name, _ := md["name"].(string)
			if name == "" {
				return nil, nil, fmt.Errorf("lab: document %d: a Knative Service without metadata.name", i+1)
			}
			// The namespace is the world's (kubectl apply -n).
			delete(md, "namespace")
			spec, _ := doc["spec"].(map[string]any)
			tmpl, _ := spec["template"].(map[string]any)
			if tmpl == nil {
				return nil, nil, fmt.Errorf("lab: document %d: Knative Service %s has no spec.template", i+1, name)
			}
			// Knative's revision spec has no terminationGracePeriodSeconds
			// (its API refuses the field: Knative derives the pods' grace
			// from the revision's timeoutSeconds); a scenario's shorter
			// grace for podgate run goes.
			if ps, _ := tmpl["spec"].(map[string]any); ps != nil {
				delete(ps, "terminationGracePeriodSeconds")
			}
			setAnnotation(tmpl, MinScaleAnnotation, strconv.Itoa(replicas))
			setAnnotation(tmpl, MaxScaleAnnotation, strconv.Itoa(replicas))
			setAnnotation(tmpl, TargetBurstCapacityAnnotation, strconv.Itoa(burst))
			names = append(names, name)
		}
		out.docs = append(out.docs, doc)
	}
	if len(names) == 0 {
		return nil, nil, errors.New("lab: ForKnative: the manifest has no Knative Service")
	}
	return out, names, nil
}

func setAnnotation(obj map[string]any, key, value string) {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	a, _ := md["annotations"].(map[string]any)
	if a == nil {
		a = map[string]any{}
		md["annotations"] = a
	}
	a[key] = value
}

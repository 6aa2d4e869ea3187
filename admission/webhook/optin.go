package webhook

import (
	"encoding/json"
	"fmt"

	"github.com/podgate/podgate/admission/workload"
)

// The opt-in label: on a namespace it injects every pod created there
// (unless the pod says disabled), on a pod it injects that pod in any
// namespace but the excluded ones.
const (
	InjectLabel    = "podgate.dev/inject"
	InjectEnabled  = "enabled"
	InjectDisabled = "disabled"
)

// KubeSystem is never injected or validated: the cluster's own pods must
// start when podgate is down.
const KubeSystem = "kube-system"

// mirrorPodAnnotation marks the API server's copy of a static pod. The
// kubelet runs the static pod from its file; a changed mirror would only
// disagree with it.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

// objectMeta is the part of an admitted object the opt-in rules read,
// decoded before anything else so that skipped objects cost little.
type objectMeta struct {
	Metadata struct {
		Name         string            `json:"name"`
		GenerateName string            `json:"generateName"`
		Labels       map[string]string `json:"labels"`
		Annotations  map[string]string `json:"annotations"`
	} `json:"metadata"`
}

func readMeta(raw []byte) (objectMeta, error) {
	var m objectMeta
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("read the object's metadata: %w", err)
	}
	return m, nil
}

// optIn holds the rules the webhook configurations' selectors state,
// checked again in code: selectors can be edited, widened by mistake or
// dropped by a tool that rewrites the configuration, and kube-system and
// podgate's own namespace must never depend on podgate being up.
type optIn struct {
	// ownNamespace is podgate's namespace: its own pods start without it.
	ownNamespace string
}

// skip says why podgate leaves an object alone, or "" when it does not:
// a namespace podgate never touches, an object that opted out, a mirror
// pod, or an object of a Knative revision (Knative fronts those with its
// queue-proxy; podgate checks the Knative Service instead).
//
// Whether the namespace opted in is left to the namespaceSelector: the
// admission request does not carry the namespace's labels, and reading
// them would need a right over every namespace that podgate otherwise
// does without.
func (o optIn) skip(namespace string, m objectMeta) string {
	if why := o.neverAdmitted(namespace, m); why != "" {
		return why
	}
	if rev := m.Metadata.Labels[workload.LabelKnativeRevision]; rev != "" {
		return "part of Knative revision " + rev + ": podgate validates its Knative Service"
	}
	return ""
}

// neverAdmitted is skip without the Knative rule: why podgate leaves an
// object alone whatever it is, or "".
func (o optIn) neverAdmitted(namespace string, m objectMeta) string {
	switch {
	case namespace == KubeSystem:
		return "podgate never admits objects in " + KubeSystem
	case namespace == o.ownNamespace:
		return "podgate never admits objects in its own namespace " + o.ownNamespace
	case m.Metadata.Labels[InjectLabel] == InjectDisabled:
		return "opted out: " + InjectLabel + "=" + InjectDisabled
	case m.Metadata.Annotations[mirrorPodAnnotation] != "":
		return "a mirror pod: the kubelet runs its static pod as written"
	}
	return ""
}

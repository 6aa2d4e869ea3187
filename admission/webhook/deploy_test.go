package webhook

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// hook is what the rules below read of a mutating or validating webhook.
type hook struct {
	name              string
	path              string
	failurePolicy     admissionregistrationv1.FailurePolicyType
	timeout           int32
	sideEffects       admissionregistrationv1.SideEffectClass
	resources         []string
	namespaceSelector *metav1.LabelSelector
	objectSelector    *metav1.LabelSelector
}

// TestTheDeployedConfigurations pins what docs/kubernetes.md promises of
// kube/deploy/base's webhook configurations: every webhook calls a path the
// webhook serves, within 5 s, without side effects; kube-system and
// podgate's namespace never match, even labelled; only objects that opted
// in match; Fail for pods, Ignore for workloads.
func TestTheDeployedConfigurations(t *testing.T) {
	mutating, validating, _ := buildBase(t)
	var hooks []hook
	for _, w := range mutating.Webhooks {
		hooks = append(hooks, hook{w.Name, *w.ClientConfig.Service.Path, *w.FailurePolicy, *w.TimeoutSeconds, *w.SideEffects, w.Rules[0].Resources, w.NamespaceSelector, w.ObjectSelector})
	}
	for _, w := range validating.Webhooks {
		hooks = append(hooks, hook{w.Name, *w.ClientConfig.Service.Path, *w.FailurePolicy, *w.TimeoutSeconds, *w.SideEffects, w.Rules[0].Resources, w.NamespaceSelector, w.ObjectSelector})
	}
	if len(hooks) != 8 {
		t.Fatalf("%d webhooks, want 8", len(hooks))
	}
	served := []string{PathInjectPods, PathValidatePods, PathValidateDeployments, PathValidateKnativeServices}
	ns := func(name string, l map[string]string) labels.Set {
		out := labels.Set{"kubernetes.io/metadata.name": name}
		for k, v := range l {
			out[k] = v
		}
		return out
	}
	enabled := map[string]string{InjectLabel: InjectEnabled}
	disabled := map[string]string{InjectLabel: InjectDisabled}
	for _, h := range hooks {
		t.Run(h.name, func(t *testing.T) {
			if !slices.Contains(served, h.path) {
				t.Errorf("path %s is not served", h.path)
			}
			if h.timeout != 5 || h.sideEffects != admissionregistrationv1.SideEffectClassNone {
				t.Errorf("timeout %d, side effects %s", h.timeout, h.sideEffects)
			}
			wantPolicy := admissionregistrationv1.Ignore
			if slices.Contains(h.resources, "pods") {
				wantPolicy = admissionregistrationv1.Fail
			}
			if h.failurePolicy != wantPolicy {
				t.Errorf("failurePolicy %s, want %s", h.failurePolicy, wantPolicy)
			}
			nsSel, err := metav1.LabelSelectorAsSelector(h.namespaceSelector)
			if err != nil {
				t.Fatal(err)
			}
			objSel, err := metav1.LabelSelectorAsSelector(h.objectSelector)
			if err != nil {
				t.Fatal(err)
			}
			matches := func(nsLabels, objLabels labels.Set) bool { return nsSel.Matches(nsLabels) && objSel.Matches(objLabels) }
			for _, never := range []string{KubeSystem, DefaultNamespace} {
				if matches(ns(never, enabled), enabled) || matches(ns(never, nil), enabled) {
					t.Errorf("matches an opted-in object in %s", never)
				}
			}
			if matches(ns("plain", nil), nil) {
				t.Error("matches an object that did not opt in")
			}
			if matches(ns("shop", enabled), disabled) {
				t.Error("matches an object that opted out")
			}
			if strings.HasPrefix(h.name, "namespace.") != matches(ns("shop", enabled), nil) {
				t.Error("the namespace webhooks must match, and only they, an unlabelled object in a labelled namespace")
			}
			if !strings.HasPrefix(h.name, "namespace.") && !matches(ns("plain", nil), enabled) {
				t.Error("does not match a labelled object in a plain namespace")
			}
		})
	}
}

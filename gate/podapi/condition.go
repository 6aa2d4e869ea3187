package podapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/podgate/podgate/gate"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/internal/kubeconfig"
)

// ConditionWriter implements gate.ConditionWriter: a strategic merge
// patch of the pod's status subresource that names one condition, the
// gate's. status.conditions merges by type, so the patch changes that
// condition and no other: the kubelet's (or node agent's) Ready and
// ContainersReady, written meanwhile, stay as they are.
type ConditionWriter struct {
	pods      *podsClient
	namespace string
	pod       string
	// refusedBy says who refuses a write and what to fix, for a
	// Forbidden answer; it depends on what the writer talks to.
	refusedBy func(err error) string
}

var _ gate.ConditionWriter = (*ConditionWriter)(nil)

// ConditionWriterForURL writes the gate's condition of pod in namespace
// through the API at url
// (podgate run's control API).
func ConditionWriterForURL(url, namespace, pod string) (*ConditionWriter, error) {
	return ConditionWriterForConfig(&rest.Config{Host: url}, namespace, pod)
}

// ConditionWriterForConfig is ConditionWriterForURL with the client's
// whole configuration (cfg.Host the status source's URL): a test's gate
// dials from its pod's address with cfg.Dial, as a pod's gate does by
// being in the pod's network.
func ConditionWriterForConfig(cfg *rest.Config, namespace, pod string) (*ConditionWriter, error) {
	w, err := conditionWriterFor(cfg, namespace, pod)
	if err != nil {
		return nil, err
	}
	host := cfg.Host
	w.refusedBy = func(err error) string {
		return fmt.Sprintf("the status source at %s refused it: %v (podgate's node status service writes only the condition %s of the caller's own pod, "+
			"asked from that pod's IP, and tells on the pod why it refused or could not write: kubectl describe pod)", host, err, contract.ContainersReadyCondition)
	}
	return w, nil
}

// ConditionWriterForCluster writes it through the cluster's API
// server, found as ForCluster finds it. The pod's service account needs
// permission to patch pods/status.
func ConditionWriterForCluster(namespace, pod string) (*ConditionWriter, error) {
	cfg, _, err := kubeconfig.Load("")
	if err != nil {
		return nil, err
	}
	w, err := conditionWriterFor(cfg, namespace, pod)
	if err != nil {
		return nil, err
	}
	ns := w.namespace
	w.refusedBy = func(err error) string {
		return fmt.Sprintf("the pod's service account needs verb \"patch\" on resource \"pods/status\" in namespace %s "+
			"(RBAC rule apiGroups: [\"\"], resources: [\"pods/status\"], verbs: [\"patch\"]): %v", ns, err)
	}
	return w, nil
}

func conditionWriterFor(cfg *rest.Config, namespace, pod string) (*ConditionWriter, error) {
	if pod == "" {
		return nil, errors.New("the pod name (SERVING_POD) is empty: the gate cannot write its own pod's condition")
	}
	if namespace == "" {
		namespace = "default"
	}
	c, err := newPodsClient(cfg, namespace)
	if err != nil {
		return nil, err
	}
	return &ConditionWriter{pods: c, namespace: namespace, pod: pod}, nil
}

// WriteCondition patches the gate's condition to c. A Forbidden answer
// wraps gate.ErrNotPermitted and says what to fix: on a cluster's API
// server the permission the pod's service account lacks, through a
// status source URL (the node status service) why it refused.
func (w *ConditionWriter) WriteCondition(ctx context.Context, c gate.PodCondition) error {
	patch, err := ConditionPatch(c)
	if err != nil {
		return err
	}
	err = w.pods.patchStatus(ctx, w.pod, patch)
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%w: patch pods/status of pod %s/%s: %s", gate.ErrNotPermitted, w.namespace, w.pod, w.refusedBy(err))
	}
	return fmt.Errorf("patch pods/status of pod %s/%s: %w", w.namespace, w.pod, err)
}

// ConditionPatch is the strategic merge patch that sets the gate's
// condition to c. Fields the value leaves empty are sent as null: a merge
// keeps what a patch leaves out, so True would otherwise keep the reason
// and message of the False before it.
func ConditionPatch(c gate.PodCondition) ([]byte, error) {
	status := corev1.ConditionFalse
	if c.Ready {
		status = corev1.ConditionTrue
	}
	orNull := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	var since any
	if !c.LastTransition.IsZero() {
		since = metav1.NewTime(c.LastTransition)
	}
	cond := map[string]any{
		"type":               contract.ContainersReadyCondition,
		"status":             status,
		"reason":             orNull(c.Reason),
		"message":            orNull(c.Message),
		"lastTransitionTime": since,
	}
	return json.Marshal(map[string]any{"status": map[string]any{"conditions": []any{cond}}})
}

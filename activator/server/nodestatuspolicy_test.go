package server

import (
	"context"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// TestNodeStatusPolicy checks kube/deploy/base's policy podgate-node-status
// on the real API server, with real tokens of the node status service's
// service account: one bound to a pod of it on node A (what the kubelet
// mounts into the DaemonSet's pod there; the API server puts the node in
// the token), one bound to no pod. Through that identity's RBAC (patch
// pods/status of every pod) the policy lets through the gate's condition
// of a pod on node A only.
func TestNodeStatusPolicy(t *testing.T) {
	e := sharedEnv(t)
	ctx := t.Context()
	const ns = "policy"
	const nodeA, nodeB = "policy-node-a", "policy-node-b"
	ensure(t, func() error {
		_, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		return err
	})
	// Nodes no kubelet runs: the pods bound to them stay as written.
	for _, n := range []string{nodeA, nodeB} {
		ensure(t, func() error {
			_, err := e.cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
			return err
		})
	}
	service := policyPod(t, e, "podgate-system", "podgate-node-status-a", nodeA, "podgate-node-status")
	policyPod(t, e, ns, "on-a", nodeA, "default")
	policyPod(t, e, ns, "on-b", nodeB, "default")
	// A status as a kubelet writes it, so the policy compares real
	// conditions and fields, not empty ones.
	kubelet := `{"status":{"phase":"Running","podIP":"10.1.1.1","podIPs":[{"ip":"10.1.1.1"}],"hostIP":"10.0.0.1",` +
		`"conditions":[{"type":"PodScheduled","status":"True"},{"type":"Initialized","status":"True"},{"type":"ContainersReady","status":"True"},{"type":"Ready","status":"False","reason":"ReadinessGatesNotReady"}]}}`
	for _, name := range []string{"on-a", "on-b"} {
		if _, err := e.cs.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, []byte(kubelet), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
	}

	bound := e.nodeStatusClient(t, &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: service.Name, UID: service.UID})
	unbound := e.nodeStatusClient(t, nil)
	gateCondition := `{"status":{"conditions":[{"type":"podgate.dev/containers-ready","status":"False","reason":"ContainersNotReady","message":"from the policy test"}]}}`
	for _, tc := range []struct {
		name, pod, patch string
		as               kubernetes.Interface
		// refused: "" lets it through, else the policy's message part.
		refused string
	}{
		{"writes the gate's condition of a pod on its node", "on-a", gateCondition, bound, ""},
		{"writes it again, changed", "on-a", strings.ReplaceAll(gateCondition, `"False","reason":"ContainersNotReady"`, `"True","reason":null`), bound, ""},
		{"not of a pod on another node", "on-b", gateCondition, bound, "on its own node only; system:serviceaccount:podgate-system:podgate-node-status holds the token of node policy-node-a, pod policy/on-b is on node policy-node-b"},
		{"not the pod's Ready condition", "on-a", `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`, bound, "changes another condition"},
		{"not the kubelet's ContainersReady condition", "on-a", `{"status":{"conditions":[{"type":"ContainersReady","status":"False"}]}}`, bound, "changes another condition"},
		{"not another status field", "on-a", `{"status":{"message":"rewritten"}}`, bound, "changes another status field"},
		{"not the pod's reason", "on-a", `{"status":{"reason":"Evicted"}}`, bound, "changes another status field"},
		{"not a container's status", "on-a", `{"status":{"containerStatuses":[{"name":"app","image":"example.com/app","imageID":"","ready":true,"restartCount":0,"state":{"running":{}}}]}}`, bound, "changes another status field"},
		{"not the pod's phase", "on-a", `{"status":{"phase":"Failed"}}`, bound, "changes another status field"},
		{"not the pod's labels through pods/status", "on-a", `{"metadata":{"labels":{"podgate.dev/x":"y"}}}`, bound, "labels, annotations or finalizers"},
		{"not with a token bound to no pod (no node)", "on-a", gateCondition, unbound, "holds a token bound to no node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.as.CoreV1().Pods(ns).Patch(ctx, tc.pod, types.StrategicMergePatchType, []byte(tc.patch), metav1.PatchOptions{}, "status")
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'podgate-node-status'") || !strings.Contains(err.Error(), tc.refused) {
				t.Errorf("got %v, want Forbidden by the policy podgate-node-status: %q", err, tc.refused)
			}
		})
	}
	t.Run("other writers of pod status are not concerned", func(t *testing.T) {
		// The admin (as the kubelet or a controller would) changes any
		// condition of any pod.
		_, err := e.cs.CoreV1().Pods(ns).Patch(ctx, "on-b", types.StrategicMergePatchType,
			[]byte(`{"status":{"conditions":[{"type":"Ready","status":"False"}]}}`), metav1.PatchOptions{}, "status")
		if err != nil {
			t.Error(err)
		}
	})
}

// ensure runs create and accepts AlreadyExists: the cluster is shared by
// every run of -count.
func ensure(t *testing.T, create func() error) {
	t.Helper()
	if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// policyPod makes (or finds) a pod bound to node, run by no kubelet.
func policyPod(t *testing.T, e *env, ns, name, node, serviceAccount string) *corev1.Pod {
	t.Helper()
	ctx := t.Context()
	ensure(t, func() error {
		_, err := e.cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: serviceAccount, AutomountServiceAccountToken: ptr.To(false),
				Containers: []corev1.Container{{Name: "app", Image: "example.com/app"}}},
		}, metav1.CreateOptions{})
		return err
	})
	p, err := e.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// nodeStatusClient is a client with a fresh token of the node status
// service's service account, bound to the object given (nil: none).
func (e *env) nodeStatusClient(t *testing.T, bound *authenticationv1.BoundObjectReference) kubernetes.Interface {
	t.Helper()
	tok, err := e.cs.CoreV1().ServiceAccounts("podgate-system").CreateToken(context.Background(), "podgate-node-status",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600), BoundObjectRef: bound}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of podgate-system/podgate-node-status bound to %+v: %v", bound, err)
	}
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: e.admin.Host, BearerToken: tok.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: e.admin.CAData}})
}

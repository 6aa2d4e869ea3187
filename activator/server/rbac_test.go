package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// TestLeastPrivilege checks, against the real API server's RBAC, the
// rights kube/deploy/base grants the activator and the node status
// service, and that an injected pod's service account needs and gets
// none: what they need is allowed, and everything next to it is
// Forbidden.
func TestLeastPrivilege(t *testing.T) {
	e := sharedEnv(t)
	ctx := t.Context()

	t.Run("the activator may list and watch EndpointSlices and Pods everywhere and write Events, nothing else", func(t *testing.T) {
		user := "system:serviceaccount:podgate-system:podgate-activator"
		for _, tc := range []struct {
			verb, group, resource, subresource, namespace string
			allowed                                       bool
		}{
			{"list", "discovery.k8s.io", "endpointslices", "", "", true},
			{"watch", "discovery.k8s.io", "endpointslices", "", "", true},
			{"list", "", "pods", "", "", true},
			{"watch", "", "pods", "", testNS, true},
			{"get", "", "pods", "", testNS, false},
			{"get", "discovery.k8s.io", "endpointslices", "", testNS, false},
			{"create", "discovery.k8s.io", "endpointslices", "", testNS, false},
			{"update", "discovery.k8s.io", "endpointslices", "", testNS, false},
			{"list", "", "services", "", "", false},
			{"get", "", "services", "", testNS, false},
			{"create", "", "events", "", testNS, true},
			{"patch", "", "events", "", testNS, true},
			{"list", "", "events", "", "", false},
			{"update", "", "events", "", testNS, false},
			{"delete", "", "events", "", testNS, false},
			{"create", "events.k8s.io", "events", "", testNS, false},
			{"list", "", "endpoints", "", "", false},
			{"get", "", "secrets", "", testNS, false},
			{"list", "", "secrets", "", "", false},
			{"list", "", "configmaps", "", "", false},
			{"create", "", "pods", "", testNS, false},
			{"delete", "", "pods", "", testNS, false},
			{"patch", "", "pods", "status", testNS, false},
			{"create", "", "pods", "eviction", testNS, false},
			{"list", "", "nodes", "", "", false},
		} {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   user,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:podgate-system", "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: tc.verb, Group: tc.group, Resource: tc.resource, Subresource: tc.subresource, Namespace: tc.namespace,
				},
			}}
			got, err := e.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Allowed != tc.allowed {
				t.Errorf("%s %s %s/%s in %q: allowed %v, want %v (%s)", tc.verb, tc.group, tc.resource, tc.subresource, tc.namespace, got.Status.Allowed, tc.allowed, got.Status.Reason)
			}
		}
		// And with its token, for real.
		cs := kubernetes.NewForConfigOrDie(e.activatorRest)
		if _, err := cs.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("list EndpointSlices: %v", err)
		}
		if _, err := cs.CoreV1().Secrets(testNS).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("list Secrets: %v, want Forbidden", err)
		}
		if _, err := cs.CoreV1().Services(testNS).Get(ctx, service, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("get Service: %v, want Forbidden", err)
		}
	})

	t.Run("the node status service may read pods, patch their status and write events, nothing else", func(t *testing.T) {
		user := "system:serviceaccount:podgate-system:podgate-node-status"
		for _, tc := range []struct {
			verb, group, resource, subresource, namespace string
			allowed                                       bool
		}{
			{"list", "", "pods", "", "", true},
			{"watch", "", "pods", "", "", true},
			{"get", "", "pods", "", testNS, true},
			{"patch", "", "pods", "status", testNS, true},
			{"create", "", "events", "", testNS, true},
			{"patch", "", "events", "", testNS, true},
			{"update", "", "pods", "status", testNS, false},
			{"patch", "", "pods", "", testNS, false},
			{"update", "", "pods", "", testNS, false},
			{"create", "", "pods", "", testNS, false},
			{"delete", "", "pods", "", testNS, false},
			{"create", "", "pods", "eviction", testNS, false},
			{"get", "", "secrets", "", testNS, false},
			{"list", "", "secrets", "", "", false},
			{"list", "", "configmaps", "", "", false},
			{"delete", "", "events", "", testNS, false},
			{"list", "", "nodes", "", "", false},
			{"patch", "", "nodes", "status", "", false},
			{"list", "discovery.k8s.io", "endpointslices", "", "", false},
		} {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   user,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:podgate-system", "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: tc.verb, Group: tc.group, Resource: tc.resource, Subresource: tc.subresource, Namespace: tc.namespace,
				},
			}}
			got, err := e.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Allowed != tc.allowed {
				t.Errorf("%s %s %s/%s in %q: allowed %v, want %v (%s)", tc.verb, tc.group, tc.resource, tc.subresource, tc.namespace, got.Status.Allowed, tc.allowed, got.Status.Reason)
			}
		}
	})

	// An injected pod's service account gets no right at all: labelling
	// a namespace is the only step, and no container of such a pod can
	// read or write a pod through the API server.
	t.Run("an injected pod's service account may not read or write any pod", func(t *testing.T) {
		if _, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		_, err := e.cs.CoreV1().Pods("plain").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "rbac-target", Namespace: "plain"},
			Spec:       corev1.PodSpec{NodeName: "nowhere", Containers: []corev1.Container{{Name: "app", Image: "example.com/app"}}},
		}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		rc, err := e.tokenConfig("plain", "default")
		if err != nil {
			t.Fatal(err)
		}
		plain := kubernetes.NewForConfigOrDie(rc)
		condition := []byte(`{"status":{"conditions":[{"type":"podgate.dev/containers-ready","status":"True","reason":"FromThePod"}]}}`)
		for _, tc := range []struct {
			name string
			do   func() error
		}{
			{"list its namespace's pods", func() error { _, err := plain.CoreV1().Pods("plain").List(ctx, metav1.ListOptions{}); return err }},
			{"get a pod", func() error {
				_, err := plain.CoreV1().Pods("plain").Get(ctx, "rbac-target", metav1.GetOptions{})
				return err
			}},
			{"watch a pod", func() error {
				w, err := plain.CoreV1().Pods("plain").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=rbac-target"})
				if err == nil {
					w.Stop()
				}
				return err
			}},
			{"patch a pod's gate condition", func() error {
				_, err := plain.CoreV1().Pods("plain").Patch(ctx, "rbac-target", types.StrategicMergePatchType, condition, metav1.PatchOptions{}, "status")
				return err
			}},
			{"patch a pod's labels", func() error {
				_, err := plain.CoreV1().Pods("plain").Patch(ctx, "rbac-target", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
				return err
			}},
			{"list Secrets", func() error { _, err := plain.CoreV1().Secrets("plain").List(ctx, metav1.ListOptions{}); return err }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if err := tc.do(); !apierrors.IsForbidden(err) {
					t.Errorf("got %v, want Forbidden", err)
				}
			})
		}
	})

	t.Run("an activator whose identity cannot list EndpointSlices is never ready", func(t *testing.T) {
		cfg := Config{Rest: e.gateRest, Listen: "127.0.0.1:0", MetricsListen: "127.0.0.1:0", Dial: dialPod}
		runCtx, cancel := context.WithCancel(context.Background())
		s, err := Start(runCtx, cfg)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		defer func() { cancel(); <-s.Done() }()
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			resp, err := http.Get("http://" + s.MetricsAddr().String() + PathReadyz)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "not listed yet") {
				t.Fatalf("/readyz: %d %q, want 503 not listed yet", resp.StatusCode, b)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if resp, err := http.Get("http://" + s.MetricsAddr().String() + PathHealthz); err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("/healthz: %v %v, want 200", resp, err)
		} else {
			resp.Body.Close()
		}
	})
}

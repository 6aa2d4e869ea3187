package podapi

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/gate"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/kube/controlplane"
	"github.com/podgate/podgate/test/syncbuf"
)

// A real control plane (package controlplane: etcd, kube-apiserver with
// Node,RBAC, the controller manager that makes service accounts), and the
// gate as a pod's service account, which may do nothing until the test
// grants it.

// gateKubeconfig writes a kubeconfig for service account default/gate
// with a token from the TokenRequest API, as the pod's projected token.
func gateKubeconfig(t *testing.T, cp *controlplane.ControlPlane) string {
	t.Helper()
	ctx := context.Background()
	admin, err := corev1client.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "gate"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := admin.ServiceAccounts("default").CreateToken(ctx, "gate", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config")
	ca := base64.StdEncoding.EncodeToString(cp.AdminConfig().CAData)
	if err := os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: k, cluster: {server: "`+cp.URL()+`", certificate-authority-data: "`+ca+`"}}]
contexts: [{name: k, context: {cluster: k, user: gate, namespace: default}}]
users: [{name: gate, user: {token: "`+tok.Status.Token+`"}}]
current-context: k
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOnAClusterAMissingPermissionIsLoggedOnceAndNamed runs the gate's
// writer as PODGATE_STATUS_SOURCE=kubernetes builds it ($KUBECONFIG, here
// with a service account's token) against a real API server with RBAC. Without permission to patch
// pods/status the write is refused: the error names the permission, the
// gate logs it once however often it retries (every 30 s), and once the
// permission is granted the next retry writes the condition, beside the
// conditions already on the pod.
func TestOnAClusterAMissingPermissionIsLoggedOnceAndNamed(t *testing.T) {
	cp, err := controlplane.Start(t.Context(), controlplane.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	admin, err := corev1client.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	p, err := admin.Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1"},
		// Bound to a node that does not exist: the scheduler leaves it alone.
		Spec: corev1.PodSpec{NodeName: "no-such-node", Containers: []corev1.Container{{Name: "web", Image: "ghcr.io/podgate/testapp"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: contract.ContainersReadyCondition}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Someone else's condition (the kubelet's, on a node) is there first.
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if _, err := admin.Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Setenv("KUBECONFIG", gateKubeconfig(t, cp))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	w, err := ConditionWriterForCluster("default", "web-1")
	if err != nil {
		t.Fatal(err)
	}
	err = w.WriteCondition(ctx, gate.PodCondition{Ready: true, LastTransition: time.Now()})
	if !errors.Is(err, gate.ErrNotPermitted) || !strings.Contains(err.Error(), `verb "patch" on resource "pods/status"`) ||
		!strings.Contains(err.Error(), `User "system:serviceaccount:default:gate" cannot patch resource "pods/status"`) {
		t.Fatalf("write without permission: %v; want ErrNotPermitted naming the permission", err)
	}

	// The gate: no probes and no status source, so ready at once, and its
	// writer the only thing waiting on the clock.
	clk := testingclock.NewFakeClock(time.Now())
	host, port, _ := startApp(t)
	cfg := contract.Defaults()
	cfg.UpstreamHost, cfg.UserPort, cfg.DrainQuietPeriod = host, port, 0
	cfg.Namespace, cfg.Pod, cfg.Containers = "default", "web-1", []string{"web"}
	var logs syncbuf.Buffer
	g, err := gate.New(gate.Options{Config: cfg, Conditions: w, Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	runGate(t, g)
	const refused = "the API refuses the gate's pod condition"
	eventually(t, "the refusal is logged", func() bool { return strings.Contains(logs.String(), refused) })
	for range 3 {
		eventually(t, "the writer waits to retry", clk.HasWaiters)
		clk.Step(30 * time.Second) // a refusal for want of permission is retried every 30 s
	}
	eventually(t, "the writer waits again", clk.HasWaiters)
	if n := strings.Count(logs.String(), refused); n != 1 {
		t.Errorf("the refusal was logged %d times over 4 attempts, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), `resources: [\"pods/status\"], verbs: [\"patch\"]`) {
		t.Errorf("the log does not name the permission:\n%s", logs.String())
	}

	rbac, err := rbacv1client.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.Roles("default").Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "podgate-gate"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"patch"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "podgate-gate"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "podgate-gate"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "gate", Namespace: "default"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The authorizer sees the binding within moments; retry until the
	// write goes through.
	var got *corev1.Pod
	deadline := time.Now().Add(testWait)
	for {
		eventually(t, "the writer waits to retry", clk.HasWaiters)
		clk.Step(30 * time.Second)
		eventually(t, "the attempt is over", func() bool {
			return clk.HasWaiters() || strings.Contains(logs.String(), "pod condition written")
		})
		if strings.Contains(logs.String(), "pod condition written") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the condition was not written after the permission was granted:\n%s", logs.String())
		}
	}
	if got, err = admin.Pods("default").Get(ctx, "web-1", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, c := range got.Status.Conditions {
		types = append(types, fmt.Sprintf("%s=%s", c.Type, c.Status))
	}
	if strings.Join(types, " ") != contract.ContainersReadyCondition+"=True PodScheduled=True" &&
		strings.Join(types, " ") != "PodScheduled=True "+contract.ContainersReadyCondition+"=True" {
		t.Errorf("conditions %v, want PodScheduled kept and the gate's True", types)
	}
}

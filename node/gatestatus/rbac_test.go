package gatestatus

import (
	"context"
	"fmt"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podgate/podgate/kube/controlplane"
)

// serviceAccountToken makes service account name in namespace default
// with a ClusterRole of its own: podVerbs on pods, create on events, and
// patch on pods/status when patchStatus; and returns a token of it.
func serviceAccountToken(t *testing.T, cp *controlplane.ControlPlane, name string, podVerbs []string, patchStatus bool) string {
	t.Helper()
	name = fmt.Sprintf("%s-%d", name, nodes.Add(1)) // unique in the shared control plane
	ctx := context.Background()
	admin, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: podVerbs},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
	}
	if patchStatus {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"patch"}})
	}
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: "default"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The authorizer learns of the binding within moments: wait until
	// the identity may list pods.
	cfg := *cp.AdminConfig()
	cfg.CertData, cfg.KeyData, cfg.BearerToken = nil, nil, tok.Status.Token
	cs, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the service account may list pods", func() bool {
		_, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil
	})
	return tok.Status.Token
}

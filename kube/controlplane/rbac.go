package controlplane

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacclient "k8s.io/client-go/kubernetes/typed/rbac/v1"
)

// NodeEndpointSlicesRole is the ClusterRole (and ClusterRoleBinding) that
// lets every node (group system:nodes) read EndpointSlices. The kubelet
// has no need of them, so neither the Node authorizer nor the bootstrap
// system:node role grants them; podgate's node reads them to hold a
// liveness kill until the pod's endpoint is no longer ready
// (docs/kubernetes.md, where the same objects are given for any cluster).
const NodeEndpointSlicesRole = "podgate:node-endpointslices"

// nodeEndpointSlicesRBAC are the ClusterRole and its binding to the
// group of every node's credential.
func nodeEndpointSlicesRBAC() (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	meta := metav1.ObjectMeta{Name: NodeEndpointSlicesRole, Labels: map[string]string{"app.kubernetes.io/managed-by": "podgate"}}
	role := &rbacv1.ClusterRole{
		ObjectMeta: meta,
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"discovery.k8s.io"},
			Resources: []string{"endpointslices"},
			Verbs:     []string{"get", "list", "watch"},
		}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: *meta.DeepCopy(),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: NodeEndpointSlicesRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: nodesGroup}},
	}
	return role, binding
}

// kubeletAPIAdminRole is the bootstrap ClusterRole of every kubelet API
// subresource (nodes/proxy, nodes/log, …), which the API server's kubelet
// client needs for logs, exec and port-forward, as kubeadm binds it.
const kubeletAPIAdminRole = "system:kubelet-api-admin"

// KubeletAPIBinding is the ClusterRoleBinding of kubeletAPIAdminRole to
// the API server's kubelet client (KubeletClientUser).
const KubeletAPIBinding = "podgate:kube-apiserver-kubelet-client"

func kubeletAPIBinding() *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: KubeletAPIBinding, Labels: map[string]string{"app.kubernetes.io/managed-by": "podgate"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: kubeletAPIAdminRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: KubeletClientUser}},
	}
}

// installNodeRBAC creates what podgate's nodes need beyond the kubelet's
// permissions (NodeEndpointSlicesRole) and what the API server needs of
// them (KubeletAPIBinding), or leaves it as it is when it exists.
func (c *ControlPlane) installNodeRBAC(ctx context.Context) error {
	client, err := rbacclient.NewForConfig(c.AdminConfig())
	if err != nil {
		return fmt.Errorf("controlplane: client: %w", err)
	}
	role, binding := nodeEndpointSlicesRBAC()
	if _, err := client.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("controlplane: ClusterRole %s: %w", role.Name, err)
	}
	for _, b := range []*rbacv1.ClusterRoleBinding{binding, kubeletAPIBinding()} {
		if _, err := client.ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("controlplane: ClusterRoleBinding %s: %w", b.Name, err)
		}
	}
	return nil
}

package cluster

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Several clusters on one machine, started at once, each in its own
// network namespace with its own pod range and API port: both come up,
// each runs and serves its own pod, and stopping one leaves the other
// running (kind's several clusters, without docker).
func TestTwoClustersSideBySide(t *testing.T) {
	t.Parallel()
	cidrs := []string{"10.250.61.0/24", "10.250.62.0/24"}
	began := time.Now()
	var ups []*upProcess
	for _, cidr := range cidrs {
		ups = append(ups, launch(t, cidr, []string{"--no-install"}))
	}
	for _, u := range ups {
		u.waitUp()
	}
	t.Logf("two clusters started at once, both Ready %s after the start", time.Since(began).Round(100*time.Millisecond))

	pods := make([]*corev1.Pod, len(ups))
	for i, u := range ups {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
			Spec:       testappSpec(false),
		}
		if _, err := u.client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pods[i] = u.waitPod("web", "ready", func(p *corev1.Pod) (bool, string) {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					return true, ""
				}
			}
			return false, string(p.Status.Phase)
		})
	}
	for i, u := range ups {
		ip := pods[i].Status.PodIP
		if a, err := netip.ParseAddr(ip); err != nil || !netip.MustParsePrefix(cidrs[i]).Contains(a) {
			t.Errorf("cluster %d: pod IP %q, want one of its own range %s", i, ip, cidrs[i])
		}
		code, body, err := u.get(ip, "/")
		if err != nil || code != 200 || !strings.Contains(body, "web") {
			t.Errorf("cluster %d: GET http://%s:8080/ = %d %q %v; want its pod answering", i, ip, code, body, err)
		}
	}
	if ups[0].config.Host == ups[1].config.Host {
		t.Errorf("both clusters' API servers at %s", ups[0].config.Host)
	}

	// The first stops; the second's node, pod and network go on.
	if err := ups[0].interrupt(); err != nil {
		t.Fatalf("the first cluster's stop: %v", err)
	}
	u := ups[1]
	node, err := u.client.CoreV1().Nodes().Get(context.Background(), DefaultNodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the second cluster's API after the first stopped: %v", err)
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			t.Errorf("the second cluster's node: Ready=%s (%s) after the first stopped", c.Status, c.Message)
		}
	}
	if code, _, err := u.get(pods[1].Status.PodIP, "/"); err != nil || code != 200 {
		t.Errorf("the second cluster's pod after the first stopped: %d %v", code, err)
	}
}

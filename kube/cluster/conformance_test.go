package cluster

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/test/conformance"
)

// TestProbeBehavioursOnARealCluster runs the table of the kubelet's probe
// behaviours on a cluster of `podgate cluster up`: each pod behind a
// Service of its own, so that the real EndpointSlice controller publishes
// it; the pods are created, observed and deleted through client-go,
// scheduled by the real scheduler, and reached inside the cluster's
// network namespace.
func TestProbeBehavioursOnARealCluster(t *testing.T) {
	conformance.Run(t, func(t *testing.T, pods []*corev1.Pod) *conformance.World {
		u := startUp(t, "10.250.5.0/24")
		t.Logf("cluster up: ready %s after the start", time.Since(u.began).Round(time.Millisecond))
		core := u.client.CoreV1()
		for _, p := range pods {
			if _, err := core.Services(p.Namespace).Create(t.Context(), conformance.Service(p), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := core.Pods(p.Namespace).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		return &conformance.World{Client: u.client, Namespace: "default", HTTP: u.httpClient()}
	})
}

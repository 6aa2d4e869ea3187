package node

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

func TestTestappPodServesOnItsOwnIP(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.start(`
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    ports: [{containerPort: 8080}]
    readinessProbe:
      httpGet: {path: /readyz, port: 8080}
      periodSeconds: 1
`)
	p := h.waitPod("web", "ready", podReady)
	if !strings.HasPrefix(p.Status.PodIP, "127.0.") || p.Status.PodIP == "127.0.0.1" {
		t.Fatalf("podIP = %q, want an address of its own in the pod range", p.Status.PodIP)
	}
	code, body, err := get("http://" + p.Status.PodIP + ":8080/")
	if err != nil || code != 200 {
		t.Fatalf("GET / = %d %q %v", code, body, err)
	}
	if p.Status.Phase != corev1.PodRunning {
		t.Errorf("phase = %s, want Running", p.Status.Phase)
	}
	// The endpoint follows the pod status it is derived from.
	h.waitSlice("web", "ready at "+p.Status.PodIP, func(s *discoveryv1.EndpointSlice) bool {
		ep := endpointOf(s, "web")
		return ep != nil && *ep.Conditions.Ready && ep.Addresses[0] == p.Status.PodIP
	})
}

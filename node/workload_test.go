package node

import (
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/local/controllers"
)

func TestKnativeServicePods(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.start(`apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: hello}
spec:
  template:
    spec:
      containers:
      - image: busybox
        command: ["/bin/sh", "-c", "echo \"env $K_SERVICE $K_REVISION $PORT $POD_IP $HOSTNAME\"; exec sleep 600"]
        ports: [{containerPort: 8081}]
        readinessProbe:
          exec: {command: ["true"]}
`)
	p := h.waitPodMatching("hello-00001-deployment-", "ready", podReady)
	if !regexp.MustCompile(`^hello-00001-deployment-[a-z0-9]+-[bcdfghjklmnpqrstvwxz2456789]{5}$`).MatchString(p.Name) {
		t.Errorf("pod name %q, want hello-00001-deployment-<hash>-<5>", p.Name)
	}
	for k, v := range map[string]string{
		workload.LabelKnativeService: "hello", workload.LabelKnativeConfiguration: "hello",
		workload.LabelKnativeRevision: "hello-00001", "app": "hello-00001",
	} {
		if p.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, p.Labels[k], v)
		}
	}
	h.waitOutputCount(p.Name, "env hello hello-00001 8081 "+p.Status.PodIP+" "+p.Name, 1)

	h.waitSlice("hello-00001", "ready", func(s *discoveryv1.EndpointSlice) bool {
		return len(s.Endpoints) == 1 && *s.Endpoints[0].Conditions.Ready
	})
	s := h.slice("hello-00001")
	if s == nil || *s.Ports[0].Port != 8081 || s.Labels[controllers.LabelServiceName] != "hello-00001" || s.Labels[workload.LabelKnativeService] != "hello" {
		t.Fatalf("EndpointSlice = %+v, want hello-00001 on port 8081 with the service labels", s)
	}
	deadline := time.Now().Add(waitLimit)
	for {
		svc, err := h.store.Services.Get("default", "hello")
		if err == nil && svc.Status.URL == "http://hello.default.example.com" {
			if c := svc.Status.Condition("Ready"); c != nil && c.Status == corev1.ConditionTrue {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("service = %+v, %v; want the URL and Ready", svc, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestReplicasOverride(t *testing.T) {
	t.Parallel()
	two := int32(2)
	h := newHarness(t)
	h.replicas = &two
	h.start(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: c, image: busybox, command: ["sleep", "600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: solo}
spec:
  containers:
  - {name: c, image: busybox, command: ["sleep", "600"]}
`)
	h.waitPod("solo", "running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	h.waitSlice("web", "two endpoints", func(s *discoveryv1.EndpointSlice) bool { return len(s.Endpoints) == 2 })
	pods, _ := h.store.Pods.List("default")
	var web, ips []string
	for _, p := range pods {
		if strings.HasPrefix(p.Name, "web-") {
			web = append(web, p.Name)
		}
		ips = append(ips, p.Status.PodIP)
	}
	if len(web) != 2 || len(pods) != 3 {
		t.Errorf("pods = %d (web: %v), want 2 of the Deployment and the Pod", len(pods), web)
	}
	seen := map[string]bool{}
	for _, ip := range ips {
		if seen[ip] {
			t.Errorf("two pods share the IP %s", ip)
		}
		seen[ip] = true
	}
}

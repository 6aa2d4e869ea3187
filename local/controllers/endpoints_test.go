package controllers

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/local/objstore"
	"github.com/podgate/podgate/local/servingv1"
)

const waitLimit = 10 * time.Second

func loadWorkloads(t *testing.T, manifest string) []*workload.Workload {
	t.Helper()
	m, err := workload.Load(strings.NewReader(manifest), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return m.Workloads
}

const deploymentAndService = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web, tier: front}}
    spec:
      containers:
      - {name: app, image: busybox, command: ["true"], ports: [{name: http, containerPort: 8080}]}
---
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: hello}
spec:
  template:
    spec:
      containers:
      - {name: app, image: busybox, command: ["true"], ports: [{containerPort: 8080}]}
`

type podState struct {
	name, ip    string
	labels      map[string]string
	ready       bool
	terminating bool
	phase       corev1.PodPhase
	statuses    []corev1.ContainerStatus
}

func (s podState) pod() *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: s.name, UID: types.UID("uid-" + s.name), Labels: s.labels},
		Spec:       corev1.PodSpec{NodeName: "n1"},
		Status:     corev1.PodStatus{Phase: s.phase, PodIP: s.ip, ContainerStatuses: s.statuses},
	}
	if p.Status.Phase == "" {
		p.Status.Phase = corev1.PodRunning
	}
	ready := corev1.ConditionFalse
	if s.ready {
		ready = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}
	if s.terminating {
		ts := metav1.NewTime(epoch)
		p.DeletionTimestamp = &ts
	}
	return p
}

func startEndpoints(t *testing.T, cfg EndpointsConfig) (*Endpoints, *objstore.Store) {
	t.Helper()
	if cfg.Store == nil {
		cfg.Store = objstore.New(objstore.Options{})
	}
	e, err := NewEndpoints(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return e, cfg.Store
}

func waitSlice(t *testing.T, store *objstore.Store, name, what string, cond func(*discoveryv1.EndpointSlice) bool) *discoveryv1.EndpointSlice {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	var s *discoveryv1.EndpointSlice
	for time.Now().Before(deadline) {
		var err error
		if s, err = store.EndpointSlices.Get("default", name); err == nil && cond(s) {
			return s
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("EndpointSlice %s: not %s within %s; last %+v", name, what, waitLimit, s)
	return nil
}

type epView struct {
	ready, serving, terminating bool
}

func endpointsByPod(s *discoveryv1.EndpointSlice) map[string]epView {
	out := map[string]epView{}
	for _, ep := range s.Endpoints {
		out[ep.TargetRef.Name] = epView{*ep.Conditions.Ready, *ep.Conditions.Serving, *ep.Conditions.Terminating}
	}
	return out
}

func TestEndpointSlicesFollowThePodsAsTheEndpointSliceControllerDoes(t *testing.T) {
	t.Parallel()
	web := map[string]string{"app": "web"}
	tests := []struct {
		name string
		pods []podState
		want map[string]epView
	}{
		{name: "a ready pod is ready and serving", pods: []podState{{name: "a", ip: "127.0.1.1", labels: web, ready: true}},
			want: map[string]epView{"a": {ready: true, serving: true}}},
		{name: "an unready pod is neither", pods: []podState{{name: "a", ip: "127.0.1.1", labels: web}},
			want: map[string]epView{"a": {}}},
		{name: "a terminating ready pod serves but is not ready", pods: []podState{{name: "a", ip: "127.0.1.1", labels: web, ready: true, terminating: true}},
			want: map[string]epView{"a": {serving: true, terminating: true}}},
		{name: "a finished pod and one without an IP are no endpoints", pods: []podState{
			{name: "done", ip: "127.0.1.1", labels: web, phase: corev1.PodSucceeded},
			{name: "failed", ip: "127.0.1.2", labels: web, phase: corev1.PodFailed},
			{name: "new", labels: web}},
			want: map[string]epView{}},
		{name: "pods the selector does not pick are left out", pods: []podState{
			{name: "a", ip: "127.0.1.1", labels: web, ready: true},
			{name: "other", ip: "127.0.1.2", labels: map[string]string{"app": "other"}, ready: true}},
			want: map[string]epView{"a": {ready: true, serving: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, store := startEndpoints(t, EndpointsConfig{Workloads: loadWorkloads(t, deploymentAndService)})
			for _, p := range tt.pods {
				if _, err := store.Pods.Create(p.pod()); err != nil {
					t.Fatal(err)
				}
			}
			s := waitSlice(t, store, "web", "as the pods say", func(s *discoveryv1.EndpointSlice) bool {
				return fmt.Sprint(endpointsByPod(s)) == fmt.Sprint(tt.want)
			})
			if s.Labels[LabelServiceName] != "web" || s.Labels[LabelManagedBy] != "podgate" || *s.Ports[0].Port != 8080 || *s.Ports[0].Name != "http" {
				t.Errorf("slice labels %v, port %v %v; want service-name web, managed-by podgate, port http 8080", s.Labels, *s.Ports[0].Name, *s.Ports[0].Port)
			}
		})
	}
}

func TestEndpointsFollowDeletionAndRemoval(t *testing.T) {
	t.Parallel()
	_, store := startEndpoints(t, EndpointsConfig{Workloads: loadWorkloads(t, deploymentAndService)})
	pods := NewPods(store, nil)
	created, err := store.Pods.Create(podState{name: "a", ip: "127.0.1.1", labels: map[string]string{"app": "web"}, ready: true}.pod())
	if err != nil {
		t.Fatal(err)
	}
	waitSlice(t, store, "web", "ready", func(s *discoveryv1.EndpointSlice) bool { return endpointsByPod(s)["a"].ready })
	if err := pods.DeletePod(t.Context(), "default", "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSlice(t, store, "web", "terminating", func(s *discoveryv1.EndpointSlice) bool {
		return endpointsByPod(s)["a"] == epView{serving: true, terminating: true}
	})
	if err := pods.RemovePod("default", "a", created.UID); err != nil {
		t.Fatal(err)
	}
	waitSlice(t, store, "web", "empty", func(s *discoveryv1.EndpointSlice) bool { return len(s.Endpoints) == 0 })
}

func TestAWrittenStatusReachesTheSliceBeforeTheWriteReturns(t *testing.T) {
	t.Parallel()
	e, store := startEndpoints(t, EndpointsConfig{Workloads: loadWorkloads(t, deploymentAndService)})
	pods := NewPods(store, nil)
	pods.SetWritten(e.PodWritten)
	created, err := store.Pods.Create(podState{name: "a", ip: "127.0.1.1", labels: map[string]string{"app": "web"}, ready: true}.pod())
	if err != nil {
		t.Fatal(err)
	}
	waitSlice(t, store, "web", "ready", func(s *discoveryv1.EndpointSlice) bool { return endpointsByPod(s)["a"].ready })
	unready := created.DeepCopy()
	unready.Status.Conditions[0].Status = corev1.ConditionFalse
	if err := pods.UpdatePodStatus(unready); err != nil {
		t.Fatal(err)
	}
	s, err := store.EndpointSlices.Get("default", "web")
	if err != nil {
		t.Fatal(err)
	}
	if endpointsByPod(s)["a"].ready {
		t.Error("the endpoint was still ready when UpdatePodStatus returned")
	}
	// The watch brings the older states afterwards: they do not win.
	time.Sleep(50 * time.Millisecond)
	if s, _ := store.EndpointSlices.Get("default", "web"); endpointsByPod(s)["a"].ready {
		t.Error("an older state from the watch made the endpoint ready again")
	}
}

type servingCount struct{ n atomic.Int32 }

func (c *servingCount) ServingPods(_, _ string) (int, bool) { return int(c.n.Load()), true }

func waitCondition(t *testing.T, store *objstore.Store, what, typ string, status corev1.ConditionStatus, reason string) *servingv1.Service {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	var svc *servingv1.Service
	for time.Now().Before(deadline) {
		svc, _ = store.Services.Get("default", "hello")
		if svc != nil {
			for _, c := range svc.Status.Conditions {
				if c.Type == typ && c.Status == status && c.Reason == reason {
					return svc
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("service hello %s: no %s=%s (%s) within %s; last %+v", what, typ, status, reason, waitLimit, svc)
	return nil
}

func TestKnativeServiceStatusFollowsThePodsAndTheFrontDoor(t *testing.T) {
	t.Parallel()
	count := &servingCount{}
	e, store := startEndpoints(t, EndpointsConfig{Workloads: loadWorkloads(t, deploymentAndService), Serving: count, Domain: "podgate.test"})
	rev := map[string]string{workload.LabelKnativeRevision: "hello-00001"}
	svc := waitCondition(t, store, "before any pod", "Ready", corev1.ConditionUnknown, "RevisionMissing")
	if svc.Status.URL != "http://hello.default.podgate.test" {
		t.Errorf("url %q, want http://hello.default.podgate.test", svc.Status.URL)
	}
	p, err := store.Pods.Create(podState{name: "h", ip: "127.0.1.9", labels: rev, ready: true}.pod())
	if err != nil {
		t.Fatal(err)
	}
	// A ready endpoint the front door does not serve is not Ready.
	waitCondition(t, store, "ready endpoint, nothing serving", "Ready", corev1.ConditionUnknown, "RevisionMissing")
	count.n.Store(1)
	e.Resync("default", "hello")
	waitCondition(t, store, "served", "Ready", corev1.ConditionTrue, "")
	count.n.Store(0)
	e.Resync("default", "hello")
	waitCondition(t, store, "no longer served", "RoutesReady", corev1.ConditionUnknown, "NoHealthyBackends")

	crashed := p.DeepCopy()
	crashed.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name:                 "app",
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error"}},
	}}
	if _, err := store.Pods.Update(crashed); err != nil {
		t.Fatal(err)
	}
	svc = waitCondition(t, store, "a container failed", "ContainerHealthy", corev1.ConditionFalse, "ExitCode3")
	for _, c := range svc.Status.Conditions {
		if c.Type == "Ready" && (c.Status != corev1.ConditionFalse || c.Reason != "RevisionFailed") {
			t.Errorf("Ready %s (%s) with a failed container and nothing serving, want False RevisionFailed", c.Status, c.Reason)
		}
	}
}

package controllers

import (
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/local/objstore"
)

const podDeploymentService = `apiVersion: v1
kind: Pod
metadata: {name: solo}
spec:
  containers:
  - {name: app, image: busybox, command: ["true"], ports: [{containerPort: 9000}]}
` + "---\n" + deploymentAndService

func startWorkloads(t *testing.T, manifest string, replicas *int32) (*Workloads, *objstore.Store) {
	t.Helper()
	store := objstore.New(objstore.Options{})
	c, err := NewWorkloads(WorkloadsConfig{
		Store: store, Workloads: loadWorkloads(t, manifest), NodeName: "n1", Replicas: replicas,
		Clock: clocktesting.NewFakePassiveClock(epoch),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c, store
}

func podsMatching(store *objstore.Store, re *regexp.Regexp) []*corev1.Pod {
	all, _ := store.Pods.List("")
	var out []*corev1.Pod
	for _, p := range all {
		if re.MatchString(p.Name) {
			out = append(out, p)
		}
	}
	return out
}

func envOf(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}

func TestWorkloadsCreatePodsAsTheControllersAndTheSchedulerWould(t *testing.T) {
	t.Parallel()
	_, store := startWorkloads(t, podDeploymentService, nil)
	tests := []struct {
		name     string
		re       string
		count    int
		owned    bool
		env      map[string]string
		labelled map[string]string
	}{
		{name: "a Pod keeps its name", re: `^solo$`, count: 1, env: map[string]string{"PORT": "9000"}},
		{name: "a Deployment's pods are NAME-hash-5, owned by its ReplicaSet", re: `^web-[a-z0-9]+-[a-z0-9]{5}$`, count: 2, owned: true,
			env: map[string]string{"PORT": "8080"}, labelled: map[string]string{"app": "web", "tier": "front"}},
		{name: "a Knative Service's pods belong to its first revision", re: `^hello-00001-deployment-[a-z0-9]+-[a-z0-9]{5}$`, count: 1, owned: true,
			env:      map[string]string{"PORT": "8080", "K_SERVICE": "hello", "K_CONFIGURATION": "hello", "K_REVISION": "hello-00001"},
			labelled: map[string]string{"serving.knative.dev/service": "hello", "serving.knative.dev/revision": "hello-00001", "app": "hello-00001"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods := podsMatching(store, regexp.MustCompile(tt.re))
			if len(pods) != tt.count {
				t.Fatalf("%d pods match %s, want %d", len(pods), tt.re, tt.count)
			}
			for _, p := range pods {
				if p.Spec.NodeName != "n1" || p.Status.Phase != corev1.PodPending || p.Status.Conditions[0].Type != corev1.PodScheduled {
					t.Errorf("%s: nodeName %q, phase %q, conditions %v: want scheduled to n1, Pending", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
				}
				if owned := len(p.OwnerReferences) == 1 && p.OwnerReferences[0].Kind == "ReplicaSet"; owned != tt.owned {
					t.Errorf("%s: owner references %v, want owned by a ReplicaSet: %v", p.Name, p.OwnerReferences, tt.owned)
				}
				env := envOf(p.Spec.Containers[0])
				for k, v := range tt.env {
					if env[k] != v {
						t.Errorf("%s: env %s=%q, want %q", p.Name, k, env[k], v)
					}
				}
				for k, v := range tt.labelled {
					if p.Labels[k] != v {
						t.Errorf("%s: label %s=%q, want %q", p.Name, k, p.Labels[k], v)
					}
				}
			}
		})
	}
	t.Run("the scheduler's event for every pod", func(t *testing.T) {
		events, _ := store.Events.List("")
		if len(events) != 4 {
			t.Fatalf("%d events, want 4 (one per pod)", len(events))
		}
		for _, e := range events {
			if e.Reason != "Scheduled" || e.Source.Component != "default-scheduler" || e.Message != "Successfully assigned default/"+e.InvolvedObject.Name+" to n1" {
				t.Errorf("event %s %q from %q, want Scheduled from default-scheduler", e.Reason, e.Message, e.Source.Component)
			}
		}
	})
}

func TestWorkloadsReplaceADeletedPodAtOnce(t *testing.T) {
	t.Parallel()
	web := regexp.MustCompile(`^web-`)
	tests := []struct {
		name  string
		grace int64 // of the DELETE; 0 removes at once
	}{
		{name: "when its deletion starts", grace: 30},
		{name: "when it is removed at once", grace: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, store := startWorkloads(t, podDeploymentService, nil)
			pods := NewPods(store, nil)
			victim := podsMatching(store, web)[0]
			if err := pods.DeletePod(t.Context(), "default", victim.Name, metav1.DeleteOptions{GracePeriodSeconds: &tt.grace}); err != nil {
				t.Fatal(err)
			}
			waitPods(t, store, web, "a replacement", func(ps []*corev1.Pod) bool {
				live := 0
				for _, p := range ps {
					if p.DeletionTimestamp == nil && p.Name != victim.Name {
						live++
					}
				}
				return live == 2
			})
		})
	}
	t.Run("a bare Pod is not replaced", func(t *testing.T) {
		t.Parallel()
		_, store := startWorkloads(t, podDeploymentService, nil)
		zero := int64(0)
		if err := NewPods(store, nil).DeletePod(t.Context(), "default", "solo", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // a replacement would be made at once
		if ps := podsMatching(store, regexp.MustCompile(`^solo`)); len(ps) != 0 {
			t.Errorf("%d pods named solo after deleting it, want 0", len(ps))
		}
	})
	t.Run("nothing is replaced once stopped", func(t *testing.T) {
		t.Parallel()
		c, store := startWorkloads(t, podDeploymentService, nil)
		c.Stop()
		victim := podsMatching(store, web)[0]
		zero := int64(0)
		if err := NewPods(store, nil).DeletePod(t.Context(), "default", victim.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		if ps := podsMatching(store, web); len(ps) != 1 {
			t.Errorf("%d pods of web after a delete while stopped, want 1", len(ps))
		}
	})
}

func TestWorkloadsReplicasOverride(t *testing.T) {
	t.Parallel()
	three := int32(3)
	_, store := startWorkloads(t, podDeploymentService, &three)
	if n := len(podsMatching(store, regexp.MustCompile(`^web-`))); n != 3 {
		t.Errorf("web has %d pods, want the override's 3", n)
	}
	if n := len(podsMatching(store, regexp.MustCompile(`^solo$`))); n != 1 {
		t.Errorf("a Pod runs %d times, want once whatever the override", n)
	}
}

func waitPods(t *testing.T, store *objstore.Store, re *regexp.Regexp, what string, cond func([]*corev1.Pod) bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		if cond(podsMatching(store, re)) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("pods %s: no %s within %s", re, what, waitLimit)
}

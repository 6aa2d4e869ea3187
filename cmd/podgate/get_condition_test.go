package main

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/podgate/podgate/gate"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/gate/podapi"
	"github.com/podgate/podgate/local/apiserver"
)

// TestGetPodsShowsTheGatesCondition: the condition the gate writes on its
// pod (here through the gate's own writer, over the control API) shows in
// `podgate get pods -o wide` as the READINESS GATES column and in -o yaml
// with its reason and message.
func TestGetPodsShowsTheGatesCondition(t *testing.T) {
	noLeaks(t)
	srv := startAPI(t, apiserver.Config{})
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1", CreationTimestamp: metav1.NewTime(time.Now().Add(-10 * time.Hour))},
		Spec: corev1.PodSpec{NodeName: "podgate", Containers: []corev1.Container{{Name: "app"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: contract.ContainersReadyCondition}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.1.9"},
	}
	if _, err := srv.store.Pods.Create(p); err != nil {
		t.Fatal(err)
	}
	w, err := podapi.ConditionWriterForURL("http://"+srv.addr, "default", "web-1")
	if err != nil {
		t.Fatal(err)
	}
	const msg = "containers not ready: side (readiness probe failed: HTTP probe failed with statuscode: 503)"
	for _, tc := range []struct {
		name  string
		c     gate.PodCondition
		gates string
		want  *corev1.PodCondition // in -o yaml
	}{
		{"without the condition, 0/1", gate.PodCondition{}, "0/1", nil},
		{"False: 0/1, the reason and message in the YAML", gate.PodCondition{Reason: contract.ReasonContainersNotReady, Message: msg, LastTransition: time.Now()}, "0/1",
			&corev1.PodCondition{Type: contract.ContainersReadyCondition, Status: corev1.ConditionFalse, Reason: contract.ReasonContainersNotReady, Message: msg}},
		{"True: 1/1", gate.PodCondition{Ready: true, LastTransition: time.Now()}, "1/1",
			&corev1.PodCondition{Type: contract.ContainersReadyCondition, Status: corev1.ConditionTrue}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.c.Ready || tc.c.Reason != "" {
				if err := w.WriteCondition(context.Background(), tc.c); err != nil {
					t.Fatal(err)
				}
			}
			code, out, errOut := cli("get", "pods", "-o", "wide", "--no-headers", "--api", srv.addr)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if f := strings.Fields(out); len(f) != 9 || f[8] != tc.gates {
				t.Errorf("wide row %q, want READINESS GATES %s", out, tc.gates)
			}
			code, out, errOut = cli("get", "pod", "web-1", "-o", "yaml", "--api", srv.addr)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var got corev1.Pod
			if err := yaml.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("-o yaml: %v\n%s", err, out)
			}
			if tc.want == nil {
				return
			}
			found := false
			for _, c := range got.Status.Conditions {
				if c.Type == tc.want.Type {
					found = true
					if c.Status != tc.want.Status || c.Reason != tc.want.Reason || c.Message != tc.want.Message || c.LastTransitionTime.IsZero() {
						t.Errorf("-o yaml shows %+v, want %+v with a transition time", c, *tc.want)
					}
				}
			}
			if !found {
				t.Errorf("-o yaml lacks the condition:\n%s", out)
			}
		})
	}
}

package server

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTheOnlyRouterTellsTheGatesOfPodsNoTargetFollows: an activator that
// is the only router (Config.OnlyRouter, no fixed routes: `podgate
// activator --only-router`) tells the gate of a pod in no open target
// that it gets nothing more as soon as the pod is deleted, so the drain
// ends without the quiet period; as it stops, it tells a running pod's
// gate only on the condition that it drains (it does not: 409).
func TestTheOnlyRouterTellsTheGatesOfPodsNoTargetFollows(t *testing.T) {
	e := sharedEnv(t)
	ctx := t.Context()
	pod, err := e.gatedPodRouted("lone", true)
	if err != nil {
		t.Fatal(err)
	}
	// In no Service: the slice mirror picks app=web only.
	pod.Labels = map[string]string{"app": "lone"}
	if _, err := e.cs.CoreV1().Pods(testNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.cs.CoreV1().Pods(testNS).Delete(context.Background(), "lone", metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	})
	if err := poll(time.Minute, func() (bool, error) {
		p, err := e.cs.CoreV1().Pods(testNS).Get(ctx, "lone", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("pod lone not ready: %v", err)
	}

	t.Run("stopping, it tells a running pod's gate only on the condition that it drains", func(t *testing.T) {
		_, stop, err := e.startActivator(Config{OnlyRouter: true})
		if err != nil {
			t.Fatal(err)
		}
		stop()
		want := `pod=lone why="the activator stops (counts only if the gate drains)" answer="409 ignored: the gate is not draining`
		if !strings.Contains(e.log.String(), want) {
			t.Errorf("the activator's log does not say %q", want)
		}
	})

	t.Run("a deleted pod's gate is told at once and its drain ends without the quiet period", func(t *testing.T) {
		_, stop, err := e.startActivator(Config{OnlyRouter: true})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		begin := time.Now()
		// The manifest's grace period of 10 s: a quiet period of 5 s.
		if err := e.cs.CoreV1().Pods(testNS).Delete(ctx, "lone", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := poll(time.Minute, func() (bool, error) {
			_, err := e.cs.CoreV1().Pods(testNS).Get(ctx, "lone", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}); err != nil {
			t.Fatalf("pod lone not gone: %v", err)
		}
		took := time.Since(begin)
		t.Logf("pod lone gone %s after its deletion (quiet period 5s)", took.Round(time.Millisecond))
		for _, want := range []string{
			`msg="told the gate it gets no more traffic" pod=lone why="the pod is terminating and no open target routes to it" answer="200 ok`,
			"drained: the activator, this pod's only router, no longer routes here",
		} {
			if !strings.Contains(e.log.String(), want) {
				t.Errorf("the log does not say %q", want)
			}
		}
		if took >= 5*time.Second {
			t.Errorf("the pod went %s after its deletion: its quiet period ran", took)
		}
	})
}

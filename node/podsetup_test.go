package node

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/node/env"
	"github.com/podgate/podgate/node/events"
)

// setupRecorder is a PodSetup whose Prepare fails a set number of times,
// or blocks until its context ends.
type setupRecorder struct {
	failures  int32 // Prepare fails this often before it succeeds
	block     bool  // Prepare waits for its context instead
	calls     atomic.Int32
	cancelled atomic.Bool
	released  atomic.Int32
	pod       atomic.Pointer[corev1.Pod]
}

func (s *setupRecorder) setup(pod *corev1.Pod) PodExtras {
	s.pod.Store(pod)
	return PodExtras{
		Env: []env.Var{{Name: "EXTRA", Value: "from-the-node"}, {Name: "POD_IP", Value: "replaced"}},
		Prepare: func(ctx context.Context) error {
			n := s.calls.Add(1)
			if s.block {
				<-ctx.Done()
				s.cancelled.Store(true)
				return ctx.Err()
			}
			if n <= s.failures {
				return errors.New("token not issued yet")
			}
			return nil
		},
		Release: func() { s.released.Add(1) },
	}
}

const setupPod = `
apiVersion: v1
kind: Pod
metadata: {name: setup}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox
    command: ["/bin/sh", "-c", "echo extra=$EXTRA ref=$REF ip=$POD_IP; exec sleep 600"]
    env: [{name: REF, value: "$(EXTRA)!"}]
`

func TestPodSetupGivesEnvAndHoldsContainersUntilPrepared(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		failures int32
	}{
		{"prepared at once", 0},
		{"prepared after two failures, each a FailedMount event", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &setupRecorder{failures: tt.failures}
			h := newHarness(t, func(o *Options) { o.PodSetup = rec.setup })
			h.start(setupPod)
			// The container's own env refers to the node's variable; a
			// variable the node sets replaces what the agent injects.
			h.waitOutputCount("setup", "extra=from-the-node ref=from-the-node! ip=replaced", 1)
			if got := rec.calls.Load(); got != tt.failures+1 {
				t.Errorf("Prepare called %d times, want %d", got, tt.failures+1)
			}
			if tt.failures > 0 {
				h.waitEventCount("setup", events.ReasonFailedMount, "token not issued yet", tt.failures)
			}
			if p := rec.pod.Load(); p == nil || p.Name != "setup" {
				t.Errorf("PodSetup got pod %v, want setup", p)
			}
			if err := h.pods.DeletePod(context.Background(), "default", "setup", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			h.waitGone("setup")
			if got := rec.released.Load(); got != 1 {
				t.Errorf("Release called %d times after the pod went, want 1", got)
			}
		})
	}
}

func TestPodStillPreparingStaysContainerCreatingAndDeletionEndsPrepare(t *testing.T) {
	t.Parallel()
	rec := &setupRecorder{block: true}
	h := newHarness(t, func(o *Options) { o.PodSetup = rec.setup })
	h.start(setupPod)
	p := h.waitPod("setup", "reported", func(p *corev1.Pod) bool { return len(p.Status.ContainerStatuses) == 1 })
	if w := containerStatus(p, "c").State.Waiting; w == nil || w.Reason != "ContainerCreating" {
		t.Fatalf("container state = %s, want Waiting(ContainerCreating) while Prepare runs", stateString(containerStatus(p, "c").State))
	}
	if err := h.pods.DeletePod(context.Background(), "default", "setup", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitGone("setup")
	if !rec.cancelled.Load() {
		t.Error("Prepare's context did not end when the pod was deleted")
	}
	if got := rec.released.Load(); got != 1 {
		t.Errorf("Release called %d times, want 1", got)
	}
	if n := h.outputCount("setup", "extra="); n != 0 {
		t.Errorf("the container started %d time(s) without Prepare succeeding", n)
	}
}

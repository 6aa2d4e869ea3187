package node

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/node/events"
)

// barrier waits until the pod worker has handled everything queued so far
// and published the result.
func (h *harness) barrier(pod string) {
	h.t.Helper()
	p := h.agent.pod("default", pod)
	if p == nil {
		h.t.Fatalf("no pod worker for %s", pod)
	}
	done := make(chan struct{})
	p.post(evBarrier{done: done})
	select {
	case <-done:
	case <-time.After(waitLimit):
		h.t.Fatalf("pod worker %s did not answer within %s", pod, waitLimit)
	}
}

// TestCrashLoopBackOffOnAFakeClock runs a container that exits at once and
// steps a fake clock through the kubelet's backoff: nothing restarts a
// moment before the delay is over, it restarts once it is.
func TestCrashLoopBackOffOnAFakeClock(t *testing.T) {
	t.Parallel()
	fc := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newHarness(t, withClock(fc))
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	// Exits 1 at once unless told to stay up: then it runs until release
	// appears.
	h.start(fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  containers:
  - name: c
    image: busybox
    command: ["/bin/sh", "-c", "if [ -e %[1]s/stay ]; then until [ -e %[2]s ]; do sleep 0.02; done; rm -f %[2]s %[1]s/stay; fi; exit 1"]
`, dir, release))

	crashLooping := func(delay string) func(*corev1.Pod) bool {
		return func(p *corev1.Pod) bool {
			w := containerStatus(p, "c").State.Waiting
			return w != nil && w.Reason == "CrashLoopBackOff" && strings.HasPrefix(w.Message, "back-off "+delay+" ")
		}
	}
	// First death: restarted at once, without the clock moving.
	p := h.waitPod("crash", "back off 10s after the second death", crashLooping("10s"))
	if got := restarts(p, "c"); got != 1 {
		t.Fatalf("restartCount = %d after the immediate restart, want 1", got)
	}
	if msg := containerStatus(p, "c").State.Waiting.Message; msg != fmt.Sprintf("back-off 10s restarting failed container=c pod=crash_default(%s)", p.UID) {
		t.Errorf("waiting message = %q", msg)
	}
	if lt := containerStatus(p, "c").LastTerminationState.Terminated; lt == nil || lt.ExitCode != 1 || lt.Reason != "Error" {
		t.Errorf("lastState = %+v, want terminated with exit code 1, reason Error", lt)
	}
	h.waitEvent("crash", events.ReasonBackOff, fmt.Sprintf("Back-off restarting failed container c in pod crash_default(%s)", p.UID))

	wantRestarts := int32(1)
	for _, delay := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second} {
		fc.Step(delay - time.Millisecond)
		h.barrier("crash")
		p, _ = h.store.Pods.Get("default", "crash")
		if got := restarts(p, "c"); got != wantRestarts {
			t.Fatalf("%s before the end of the %s back-off: restartCount = %d, want %d (no restart yet)", time.Millisecond, delay, got, wantRestarts)
		}
		wantRestarts++
		next := min(2*delay, 300*time.Second)
		fc.Step(time.Millisecond)
		h.waitPod("crash", fmt.Sprintf("restarted after %s and backing off %s", delay, next), func(p *corev1.Pod) bool {
			return restarts(p, "c") == wantRestarts && crashLooping(next.String())(p)
		})
	}

	// A container that ran for more than 10 minutes starts over: its next
	// restart is immediate.
	if err := os.WriteFile(filepath.Join(dir, "stay"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fc.Step(300 * time.Second)
	wantRestarts++
	h.waitPod("crash", "running again", func(p *corev1.Pod) bool {
		return restarts(p, "c") == wantRestarts && containerStatus(p, "c").State.Running != nil
	})
	fc.Step(11 * time.Minute)
	h.barrier("crash")
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wantRestarts++
	h.waitPod("crash", "restarted at once after a long run, then backing off 10s", func(p *corev1.Pod) bool {
		return restarts(p, "c") == wantRestarts && crashLooping("10s")(p)
	})
	if n := h.events("crash", events.ReasonBackOff); len(n) != 1 || n[0].Count < 8 {
		t.Errorf("BackOff events = %+v, want one event counted at least 8 times", n)
	}
}

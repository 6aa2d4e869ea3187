package node

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/node/imagepull"
	"github.com/podgate/podgate/node/images"
)

// TestAContainerWhoseImageTheNodeLacksWaitsAsForAFailedPull runs, through
// the node's real pod worker, a pod with a container of an image the node
// does not have for each pull policy, beside one that runs, and steps a
// fake clock through the kubelet's looks: the waiting reasons, messages
// and events a kubelet gives for an image it cannot pull, never
// CreateContainerConfigError.
func TestAContainerWhoseImageTheNodeLacksWaitsAsForAFailedPull(t *testing.T) {
	t.Parallel()
	fc := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newHarness(t, withClock(fc))
	h.unchecked = true
	h.start(`
apiVersion: v1
kind: Pod
metadata: {name: nopull}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: never, image: "example.test/absent:v1", imagePullPolicy: Never}
  - {name: pull, image: "example.test/absent:v2", imagePullPolicy: IfNotPresent}
  - {name: app, image: busybox, command: [sleep, "600"]}
`)
	const (
		never = `Container image "example.test/absent:v1" is not present with pull policy of Never`
		why   = `podgate's node does not pull images: it runs containers as local processes, and image "example.test/absent:v2" has no local entrypoint: give the container a command, or start the node with --image example.test/absent=/path/to/program`
	)
	waiting := func(p *corev1.Pod, c string) corev1.ContainerStateWaiting {
		if w := containerStatus(p, c).State.Waiting; w != nil {
			return *w
		}
		return corev1.ContainerStateWaiting{}
	}
	p := h.waitPod("nopull", "app running, never and pull waiting for their images", func(p *corev1.Pod) bool {
		return containerStatus(p, "app").State.Running != nil &&
			waiting(p, "never").Reason == imagepull.ReasonErrImageNeverPull && waiting(p, "pull").Reason == imagepull.ReasonErrImagePull
	})
	if w := waiting(p, "never"); w.Message != never {
		t.Errorf("never: waiting message %q, want %q", w.Message, never)
	}
	// The pull's error: what the node says of an image it lacks.
	pullErr := waiting(p, "pull").Message
	if !strings.HasPrefix(pullErr, why) || pullErr != images.PullError("example.test/absent:v2") {
		t.Errorf("pull: waiting message %q, want images.PullError, beginning %q", pullErr, why)
	}
	if p.Status.Phase != corev1.PodPending {
		t.Errorf("phase %s, want Pending (containers waiting)", p.Status.Phase)
	}
	// count is what the pod's events with reason and a message beginning
	// with prefix add up to, for container c.
	count := func(c, reason, prefix string) int32 {
		var n int32
		for _, e := range h.events("nopull", reason) {
			if e.InvolvedObject.FieldPath == "spec.containers{"+c+"}" && strings.HasPrefix(e.Message, prefix) {
				n += e.Count
			}
		}
		return n
	}
	type counts struct{ neverPull, neverErr, pulling, failedPull, errPull, backOff, errBackOff int32 }
	now := func() counts {
		return counts{
			count("never", "ErrImageNeverPull", never), count("never", "Failed", "Error: ErrImageNeverPull"),
			count("pull", "Pulling", `Pulling image "example.test/absent:v2"`),
			count("pull", "Failed", `Failed to pull image "example.test/absent:v2": `+pullErr),
			count("pull", "Failed", "Error: ErrImagePull"),
			count("pull", "BackOff", `Back-off pulling image "example.test/absent:v2"`),
			count("pull", "Failed", "Error: ImagePullBackOff"),
		}
	}
	check := func(when string, want counts, pullReason string) {
		t.Helper()
		h.barrier("nopull")
		p := h.current("nopull")
		if got := now(); got != want {
			t.Fatalf("%s: event counts %+v, want %+v; events: %v", when, got, want, h.events("nopull", ""))
		}
		if w := waiting(p, "pull"); w.Reason != pullReason {
			t.Fatalf("%s: pull waits as %s (%s), want %s", when, w.Reason, w.Message, pullReason)
		}
		if w := waiting(p, "never"); w.Reason != imagepull.ReasonErrImageNeverPull {
			t.Fatalf("%s: never waits as %s, want ErrImageNeverPull", when, w.Reason)
		}
		if len(h.events("nopull", "Pulled")) != 1 {
			t.Fatalf("%s: Pulled events %v, want only app's", when, h.events("nopull", "Pulled"))
		}
	}
	check("at once", counts{1, 1, 1, 1, 1, 0, 0}, imagepull.ReasonErrImagePull)
	fc.Step(imagepull.RetryEvery - time.Millisecond)
	check("a moment before the next look", counts{1, 1, 1, 1, 1, 0, 0}, imagepull.ReasonErrImagePull)
	fc.Step(time.Millisecond)
	// 10 s: the first back-off (10 s) is over: a second pull.
	check("10 s", counts{2, 2, 2, 2, 2, 0, 0}, imagepull.ReasonErrImagePull)
	fc.Step(imagepull.RetryEvery)
	// 20 s: inside the second back-off (20 s from 10 s).
	check("20 s", counts{3, 3, 2, 2, 2, 1, 1}, imagepull.ReasonImagePullBackOff)
	p = h.current("nopull")
	if w, want := waiting(p, "pull").Message, `Back-off pulling image "example.test/absent:v2": ErrImagePull: `+pullErr; w != want {
		t.Errorf("pull: back-off message %q, want %q", w, want)
	}
	fc.Step(imagepull.RetryEvery)
	// 30 s: over: a third pull.
	check("30 s", counts{4, 4, 3, 3, 3, 1, 1}, imagepull.ReasonErrImagePull)
	if n := len(h.events("nopull", "CreateContainerConfigError")); n != 0 {
		t.Errorf("%d CreateContainerConfigError events, want none", n)
	}
}

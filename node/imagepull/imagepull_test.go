package imagepull

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

const (
	img = "example.test/app:v1"
	why = "no registry here"
)

// The kubelet's words for img, which the node does not have.
var (
	pulling       = Event{corev1.EventTypeNormal, "Pulling", `Pulling image "example.test/app:v1"`}
	failedPull    = Event{corev1.EventTypeWarning, "Failed", `Failed to pull image "example.test/app:v1": no registry here`}
	errPull       = Event{corev1.EventTypeWarning, "Failed", "Error: ErrImagePull"}
	backOff       = Event{corev1.EventTypeNormal, "BackOff", `Back-off pulling image "example.test/app:v1"`}
	errBackOff    = Event{corev1.EventTypeWarning, "Failed", "Error: ImagePullBackOff"}
	neverPull     = Event{corev1.EventTypeWarning, "ErrImageNeverPull", `Container image "example.test/app:v1" is not present with pull policy of Never`}
	errNeverPull  = Event{corev1.EventTypeWarning, "Failed", "Error: ErrImageNeverPull"}
	backOffWaited = `Back-off pulling image "example.test/app:v1": ErrImagePull: no registry here`
)

// look is one look of the node at the container, RetryEvery after the
// previous one, and what it must give.
type look struct {
	reason, message string
	events          []Event
}

func pulled() look { return look{"ErrImagePull", why, []Event{pulling, failedPull, errPull}} }
func waited() look { return look{"ImagePullBackOff", backOffWaited, []Event{backOff, errBackOff}} }

func TestAnAbsentImageWaitsAsTheKubeletsDoes(t *testing.T) {
	t.Parallel()
	never := look{"ErrImageNeverPull", neverPull.Message, []Event{neverPull, errNeverPull}}
	// Looking every 10 s, the back-off (10 s, 20 s, 40 s, …) decides which
	// looks pull: at 0 and 10 s (the first back-off just over), 30 s,
	// 70 s, 150 s, …
	pullsAt := func(n int) []look {
		var out []look
		next, backoff := 0, 10
		for i := 0; i < n; i++ {
			if i*10 >= next {
				out = append(out, pulled())
				next, backoff = i*10+backoff, min(2*backoff, 300)
				continue
			}
			out = append(out, waited())
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		policy corev1.PullPolicy
		looks  []look
	}{
		{"pull policy Never: ErrImageNeverPull at every look, no pull", corev1.PullNever, []look{never, never, never}},
		{"pull policy IfNotPresent: a failed pull, then the back-off", corev1.PullIfNotPresent, pullsAt(8)},
		{"pull policy Always: the same", corev1.PullAlways, pullsAt(8)},
		{"no pull policy: as IfNotPresent", "", pullsAt(4)},
		{"the back-off is capped at 300 s", corev1.PullIfNotPresent, pullsAt(100)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fc := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			var p Puller
			for i, want := range tc.looks {
				at := p.Absent(img, tc.policy, why, fc.Now())
				if at.Waiting.Reason != want.reason || at.Waiting.Message != want.message {
					t.Fatalf("look %d (%d s): waiting %s %q, want %s %q", i, i*10, at.Waiting.Reason, at.Waiting.Message, want.reason, want.message)
				}
				if got, w := fmt.Sprint(at.Events), fmt.Sprint(want.events); got != w {
					t.Fatalf("look %d (%d s): events %s, want %s", i, i*10, got, w)
				}
				if next := at.Next.Sub(fc.Now()); next != RetryEvery {
					t.Fatalf("look %d: next look in %s, want %s", i, next, RetryEvery)
				}
				fc.Step(RetryEvery)
			}
		})
	}
}

func TestTheBackOffReachesItsCap(t *testing.T) {
	t.Parallel()
	fc := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var p Puller
	var pulls []string
	last := fc.Now()
	for i := 0; i < 200; i++ {
		if at := p.Absent(img, corev1.PullIfNotPresent, why, fc.Now()); at.Waiting.Reason == "ErrImagePull" {
			pulls = append(pulls, fmt.Sprintf("%.0fs", fc.Now().Sub(last).Seconds()))
			last = fc.Now()
		}
		fc.Step(RetryEvery)
	}
	// Pulls 10 s apart, then 20 s, 40 s, 80 s, 160 s, then every 300 s
	// (the looks every 10 s land on each back-off's end).
	want := "0s 10s 20s 40s 80s 160s 300s 300s 300s 300s"
	if got := strings.Join(pulls, " "); !strings.HasPrefix(got, want) {
		t.Errorf("time between pulls %s, want it to begin %s", got, want)
	}
}

func TestTwoImagesOfAPodBackOffApart(t *testing.T) {
	t.Parallel()
	fc := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var p Puller
	p.Absent(img, corev1.PullIfNotPresent, why, fc.Now())
	if at := p.Absent(img, corev1.PullIfNotPresent, why, fc.Now()); at.Waiting.Reason != "ImagePullBackOff" {
		t.Errorf("a second container of the same image: %s, want ImagePullBackOff (one back-off per pod and image, as the kubelet's)", at.Waiting.Reason)
	}
	if at := p.Absent("example.test/other:v1", corev1.PullIfNotPresent, why, fc.Now()); at.Waiting.Reason != "ErrImagePull" {
		t.Errorf("another image: %s, want ErrImagePull (its own back-off)", at.Waiting.Reason)
	}
}

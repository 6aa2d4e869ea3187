package runtime

import (
	"io"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/localcluster"
	"github.com/podgate/podgate/objstore"
)

func TestEventRecorder(t *testing.T) {
	t.Parallel()
	fc := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := objstore.New(objstore.Options{})
	r := newRecorder(localcluster.NewEvents(store), fc, "node", 3, slog.New(slog.NewTextHandler(io.Discard, nil)))
	pod := objectRef{"default", "web", "uid-1"}

	t.Run("a repeat bumps count and lastTimestamp of the same event", func(t *testing.T) {
		r.record(pod, "spec.containers{c}", corev1.EventTypeWarning, ReasonUnhealthy, "Readiness probe failed: x", componentKubelet)
		first := fc.Now()
		fc.Step(5 * time.Second)
		r.record(pod, "spec.containers{c}", corev1.EventTypeWarning, ReasonUnhealthy, "Readiness probe failed: x", componentKubelet)
		evs, _ := store.Events.List("default")
		if len(evs) != 1 {
			t.Fatalf("%d events, want 1", len(evs))
		}
		e := evs[0]
		if e.Count != 2 || !e.FirstTimestamp.Time.Equal(first) || !e.LastTimestamp.Time.Equal(fc.Now()) {
			t.Errorf("count %d first %v last %v; want 2, %v, %v", e.Count, e.FirstTimestamp, e.LastTimestamp, first, fc.Now())
		}
		if e.InvolvedObject.Kind != "Pod" || e.InvolvedObject.Name != "web" || e.InvolvedObject.UID != "uid-1" || e.InvolvedObject.FieldPath != "spec.containers{c}" {
			t.Errorf("involvedObject = %+v", e.InvolvedObject)
		}
		if e.Source.Component != "kubelet" || e.Source.Host != "node" || e.ReportingController != "kubelet" {
			t.Errorf("source = %+v, reporting %q", e.Source, e.ReportingController)
		}
	})
	t.Run("another message, field or reason is another event", func(t *testing.T) {
		r.record(pod, "spec.containers{c}", corev1.EventTypeWarning, ReasonUnhealthy, "Readiness probe failed: y", componentKubelet)
		r.record(pod, "spec.containers{d}", corev1.EventTypeWarning, ReasonUnhealthy, "Readiness probe failed: y", componentKubelet)
		evs, _ := store.Events.List("default")
		if len(evs) != 3 {
			t.Fatalf("%d events, want 3", len(evs))
		}
	})
	t.Run("past the limit the oldest event goes", func(t *testing.T) {
		r.record(pod, "", corev1.EventTypeNormal, ReasonScheduled, "Successfully assigned default/web to node", componentScheduler)
		evs, _ := store.Events.List("default")
		if len(evs) != 3 {
			t.Fatalf("%d events, want the limit of 3", len(evs))
		}
		for _, e := range evs {
			if e.Message == "Readiness probe failed: x" {
				t.Error("the oldest event is still there")
			}
			if e.Reason == ReasonScheduled && (e.Source.Component != "default-scheduler" || e.Source.Host != "") {
				t.Errorf("scheduler event source = %+v", e.Source)
			}
		}
		// Its repeat is recorded afresh.
		r.record(pod, "spec.containers{c}", corev1.EventTypeWarning, ReasonUnhealthy, "Readiness probe failed: x", componentKubelet)
		evs, _ = store.Events.List("default")
		found := false
		for _, e := range evs {
			found = found || (e.Message == "Readiness probe failed: x" && e.Count == 1)
		}
		if !found {
			t.Error("an evicted event's repeat was not recorded anew")
		}
	})
}

package events

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/local/controllers"
	"github.com/podgate/podgate/local/objstore"
	"github.com/podgate/podgate/test/syncbuf"
)

func TestEventRecorder(t *testing.T) {
	t.Parallel()
	fc := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := objstore.New(objstore.Options{})
	r := New(controllers.NewEvents(store), fc, "node", 3, slog.New(slog.NewTextHandler(io.Discard, nil)))
	pod := Object{"default", "web", "uid-1"}

	t.Run("a repeat bumps count and lastTimestamp of the same event", func(t *testing.T) {
		r.Record(pod, Event{"spec.containers{c}", corev1.EventTypeWarning, "Unhealthy", "Readiness probe failed: x", ComponentKubelet})
		first := fc.Now()
		fc.Step(5 * time.Second)
		r.Record(pod, Event{"spec.containers{c}", corev1.EventTypeWarning, "Unhealthy", "Readiness probe failed: x", ComponentKubelet})
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
		r.Record(pod, Event{"spec.containers{c}", corev1.EventTypeWarning, "Unhealthy", "Readiness probe failed: y", ComponentKubelet})
		r.Record(pod, Event{"spec.containers{d}", corev1.EventTypeWarning, "Unhealthy", "Readiness probe failed: y", ComponentKubelet})
		evs, _ := store.Events.List("default")
		if len(evs) != 3 {
			t.Fatalf("%d events, want 3", len(evs))
		}
	})
	t.Run("past the limit the oldest event goes", func(t *testing.T) {
		r.Record(pod, Event{"", corev1.EventTypeNormal, "Scheduled", "Successfully assigned default/web to node", ComponentScheduler})
		evs, _ := store.Events.List("default")
		if len(evs) != 3 {
			t.Fatalf("%d events, want the limit of 3", len(evs))
		}
		for _, e := range evs {
			if e.Message == "Readiness probe failed: x" {
				t.Error("the oldest event is still there")
			}
			if e.Reason == "Scheduled" && (e.Source.Component != "default-scheduler" || e.Source.Host != "") {
				t.Errorf("scheduler event source = %+v", e.Source)
			}
		}
		// Its repeat is recorded afresh.
		r.Record(pod, Event{"spec.containers{c}", corev1.EventTypeWarning, "Unhealthy", "Readiness probe failed: x", ComponentKubelet})
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

func TestARepeatingEventIsLoggedOnceThenReminded(t *testing.T) {
	t.Parallel()
	fc := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var log syncbuf.Buffer
	r := New(controllers.NewEvents(objstore.New(objstore.Options{})), fc, "node", 0, slog.New(slog.NewTextHandler(&log, nil)))
	pod := Object{"default", "web", "uid-1"}
	unready := Event{"spec.containers{c}", corev1.EventTypeWarning, "Unhealthy", "Readiness probe failed: x", ComponentKubelet}
	lines := func() []string { return strings.Split(strings.TrimSpace(log.String()), "\n") }

	r.Record(pod, unready)
	for range 59 { // a probe a second for a minute less a second
		fc.Step(time.Second)
		r.Record(pod, unready)
	}
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], `msg="Readiness probe failed: x"`) || strings.Contains(got[0], "repeated") {
		t.Fatalf("after 60 occurrences in 59 s, the log is %q, want the first line only", got)
	}
	fc.Step(time.Second)
	r.Record(pod, unready)
	got := lines()
	if len(got) != 2 || !strings.Contains(got[1], "repeated=60 in=1m0s") || !strings.Contains(got[1], "level=WARN") {
		t.Fatalf("a minute after the first line, the log is %q, want a reminder counting 60 repeats", got)
	}
	// A change is logged at once, and so is its own first occurrence.
	r.Record(pod, Event{"spec.containers{c}", corev1.EventTypeWarning, "Unhealthy", "Readiness probe failed: y", ComponentKubelet})
	if got := lines(); len(got) != 3 || !strings.Contains(got[2], `msg="Readiness probe failed: y"`) {
		t.Fatalf("a new message is not logged at once: %q", got)
	}
	// RecordQuietly never logs a repeat, not even a reminder.
	fc.Step(2 * ReminderEvery)
	r.RecordQuietly(pod, unready)
	if got := lines(); len(got) != 3 {
		t.Fatalf("RecordQuietly logged a repeat: %q", got)
	}
}

package objstore

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func TestInitialEventsEndWithAnAnnotatedBookmarkAtTheCurrentVersion(t *testing.T) {
	s := newTestStore(Options{})
	mustCreate(t, s, pod("ns", "a"))
	mustCreate(t, s, pod("ns", "b"))
	// A write elsewhere moves the store's version past the pods' last.
	if _, err := s.Events.Create(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e"}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := s.Pods.WatchWith(ctx, WatchOptions{SendInitialEvents: true, ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if ev := next(t, ch); ev.Type != watch.Added || ev.Object.Name != name {
			t.Fatalf("got %s %s, want ADDED %s", ev.Type, ev.Object.Name, name)
		}
	}
	ev := next(t, ch)
	if ev.Type != watch.Bookmark || ev.Object.ResourceVersion != s.ResourceVersion() ||
		ev.Object.Annotations[InitialEventsEndAnnotation] != "true" || ev.Object.Kind != "Pod" {
		t.Fatalf("got %s rv=%s annotations=%v kind=%q, want the initial-events-end BOOKMARK at %s",
			ev.Type, ev.Object.ResourceVersion, ev.Object.Annotations, ev.Object.Kind, s.ResourceVersion())
	}
	if !s.Pods.Bookmark(ch) {
		t.Fatal("Bookmark on an open watch reported false")
	}
	if ev := next(t, ch); ev.Type != watch.Bookmark || ev.Object.ResourceVersion != s.ResourceVersion() || len(ev.Object.Annotations) != 0 {
		t.Fatalf("got %s rv=%s %v, want a plain BOOKMARK at %s", ev.Type, ev.Object.ResourceVersion, ev.Object.Annotations, s.ResourceVersion())
	}
	if _, err := s.Pods.WatchWith(ctx, WatchOptions{SendInitialEvents: true, ResourceVersion: "99"}); !apierrors.IsTimeout(err) {
		t.Fatalf("initial events from a future version: got %v, want 504 Timeout", err)
	}
}

func TestCompactEndsWatchesWithExpiredAndRefusesOlderVersions(t *testing.T) {
	s := newTestStore(Options{})
	p := mustCreate(t, s, pod("ns", "a"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := s.Pods.Watch(ctx, p.ResourceVersion)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, pod("ns", "b"))
	if ev := next(t, ch); ev.Type != watch.Added {
		t.Fatalf("got %s, want ADDED b", ev.Type)
	}
	s.Compact()
	ev := next(t, ch)
	if ev.Type != watch.Error || ev.Status == nil || ev.Status.Code != 410 || ev.Status.Reason != metav1.StatusReasonExpired {
		t.Fatalf("got %s %+v, want ERROR 410 Expired", ev.Type, ev.Status)
	}
	if _, ok := <-ch; ok {
		t.Fatal("the watch stayed open after its ERROR")
	}
	if _, err := s.Pods.Watch(ctx, p.ResourceVersion); !apierrors.IsResourceExpired(err) {
		t.Fatalf("watch from before the compaction: got %v, want 410 Expired", err)
	}
	if _, err := s.Pods.Watch(ctx, s.ResourceVersion()); err != nil {
		t.Fatalf("watch from the compaction's version: %v", err)
	}
}

func TestDeletePod(t *testing.T) {
	grace := func(n int64) *int64 { return &n }
	bound := func(phase corev1.PodPhase, tgps *int64) *corev1.Pod {
		p := pod("ns", "p")
		p.Spec.NodeName = "node"
		p.Spec.TerminationGracePeriodSeconds = tgps
		p.Status.Phase = phase
		return p
	}
	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		opts      metav1.DeleteOptions
		wantGone  bool
		wantGrace int64
	}{
		{"a running bound pod gets a deletionTimestamp with the default 30 s", bound(corev1.PodRunning, nil), metav1.DeleteOptions{}, false, 30},
		{"the pod's terminationGracePeriodSeconds is the grace period", bound(corev1.PodRunning, grace(7)), metav1.DeleteOptions{}, false, 7},
		{"the delete's gracePeriodSeconds wins", bound(corev1.PodRunning, grace(7)), metav1.DeleteOptions{GracePeriodSeconds: grace(3)}, false, 3},
		{"grace period 0 removes the pod", bound(corev1.PodRunning, nil), metav1.DeleteOptions{GracePeriodSeconds: grace(0)}, true, 0},
		{"an unscheduled pod is removed at once", pod("ns", "p"), metav1.DeleteOptions{}, true, 0},
		{"a succeeded pod is removed at once", bound(corev1.PodSucceeded, nil), metav1.DeleteOptions{}, true, 0},
		{"a failed pod is removed at once", bound(corev1.PodFailed, nil), metav1.DeleteOptions{}, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStore(Options{})
			mustCreate(t, s, tc.pod)
			out, gone, err := s.DeletePod("ns", "p", tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			_, getErr := s.Pods.Get("ns", "p")
			if gone != tc.wantGone || apierrors.IsNotFound(getErr) != tc.wantGone {
				t.Fatalf("removed=%v (get: %v), want %v", gone, getErr, tc.wantGone)
			}
			if gone {
				return
			}
			want := metav1.NewTime(epoch.Add(secondsDuration(tc.wantGrace)))
			if out.DeletionGracePeriodSeconds == nil || *out.DeletionGracePeriodSeconds != tc.wantGrace ||
				out.DeletionTimestamp == nil || !out.DeletionTimestamp.Equal(&want) {
				t.Fatalf("deletionTimestamp=%v deletionGracePeriodSeconds=%v, want %v and %d",
					out.DeletionTimestamp, out.DeletionGracePeriodSeconds, want, tc.wantGrace)
			}
		})
	}
	t.Run("a second delete only ever shortens the grace period", func(t *testing.T) {
		s := newTestStore(Options{})
		mustCreate(t, s, bound(corev1.PodRunning, grace(10)))
		for _, g := range []int64{5, 20} {
			if _, _, err := s.DeletePod("ns", "p", metav1.DeleteOptions{GracePeriodSeconds: grace(g)}); err != nil {
				t.Fatal(err)
			}
		}
		p, _ := s.Pods.Get("ns", "p")
		if *p.DeletionGracePeriodSeconds != 5 {
			t.Fatalf("deletionGracePeriodSeconds=%d, want 5", *p.DeletionGracePeriodSeconds)
		}
	})
	t.Run("a stale uid precondition is a conflict", func(t *testing.T) {
		s := newTestStore(Options{})
		mustCreate(t, s, bound(corev1.PodRunning, nil))
		_, _, err := s.DeletePod("ns", "p", metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions("other")})
		if !apierrors.IsConflict(err) {
			t.Fatalf("got %v, want 409 Conflict", err)
		}
	})
}

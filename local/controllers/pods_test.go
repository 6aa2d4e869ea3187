package controllers

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/local/objstore"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newPods(t *testing.T) (*Pods, *objstore.Store) {
	t.Helper()
	clk := clocktesting.NewFakePassiveClock(epoch)
	// The store stamps deletions, as the API server does.
	store := objstore.New(objstore.Options{Now: clk.Now})
	return NewPods(store, nil), store
}

func createPod(t *testing.T, store *objstore.Store, name, node string, grace *int64) *corev1.Pod {
	t.Helper()
	p, err := store.Pods.Create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: grace},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ptr[T any](v T) *T { return &v }

func TestDeletePodMarksAsTheAPIServer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		podGrace  *int64
		deletes   []*int64 // GracePeriodSeconds of each DELETE
		wantGrace int64
		wantGone  bool
	}{
		{name: "default grace period is 30 seconds", deletes: []*int64{nil}, wantGrace: 30},
		{name: "the pod's terminationGracePeriodSeconds", podGrace: ptr[int64](5), deletes: []*int64{nil}, wantGrace: 5},
		{name: "the delete's grace period wins", podGrace: ptr[int64](5), deletes: []*int64{ptr[int64](2)}, wantGrace: 2},
		{name: "a second delete shortens", deletes: []*int64{nil, ptr[int64](3)}, wantGrace: 3},
		{name: "a second delete never lengthens", deletes: []*int64{ptr[int64](3), ptr[int64](60)}, wantGrace: 3},
		{name: "grace period 0 removes at once", deletes: []*int64{ptr[int64](0)}, wantGone: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pods, store := newPods(t)
			createPod(t, store, "web", "n1", tt.podGrace)
			for _, g := range tt.deletes {
				if err := pods.DeletePod(context.Background(), "default", "web", metav1.DeleteOptions{GracePeriodSeconds: g}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := store.Pods.Get("default", "web")
			if tt.wantGone {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("after delete: %v, %v; want NotFound", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != tt.wantGrace {
				t.Errorf("deletionGracePeriodSeconds %v, want %d", got.DeletionGracePeriodSeconds, tt.wantGrace)
			}
			want := epoch.Add(time.Duration(tt.wantGrace) * time.Second)
			if got.DeletionTimestamp == nil || !got.DeletionTimestamp.Time.Equal(want) {
				t.Errorf("deletionTimestamp %v, want %v (now + grace)", got.DeletionTimestamp, want)
			}
		})
	}
}

func TestDeletePodErrors(t *testing.T) {
	t.Parallel()
	pods, store := newPods(t)
	createPod(t, store, "web", "n1", nil)
	other := types.UID("someone-else")
	if err := pods.DeletePod(context.Background(), "default", "web", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &other}}); !apierrors.IsConflict(err) {
		t.Errorf("delete with a stale UID precondition: %v, want Conflict", err)
	}
	if err := pods.DeletePod(context.Background(), "default", "nope", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("delete of a missing pod: %v, want NotFound", err)
	}
}

func TestUpdatePodStatusNeverUndoesADeletion(t *testing.T) {
	t.Parallel()
	pods, store := newPods(t)
	created := createPod(t, store, "web", "n1", nil)
	stale := created.DeepCopy() // the agent's copy, from before the DELETE
	if err := pods.DeletePod(context.Background(), "default", "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	stale.Status.Phase = corev1.PodRunning
	if err := pods.UpdatePodStatus(stale); err != nil {
		t.Fatal(err)
	}
	got, _ := store.Pods.Get("default", "web")
	if got.DeletionTimestamp == nil || got.Status.Phase != corev1.PodRunning {
		t.Errorf("after a status write: deletionTimestamp %v, phase %q; want the deletion kept and the status written", got.DeletionTimestamp, got.Status.Phase)
	}

	t.Run("the agent's own deletion marks are taken when the API has none", func(t *testing.T) {
		p := createPod(t, store, "own", "n1", nil)
		ts, g := metav1.NewTime(epoch), int64(7)
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, &g
		if err := pods.UpdatePodStatus(p); err != nil {
			t.Fatal(err)
		}
		got, _ := store.Pods.Get("default", "own")
		if got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != 7 {
			t.Errorf("deletionGracePeriodSeconds %v, want 7", got.DeletionGracePeriodSeconds)
		}
	})
	t.Run("a status for a replaced pod is refused", func(t *testing.T) {
		p := createPod(t, store, "again", "n1", nil)
		p.UID = "old"
		if err := pods.UpdatePodStatus(p); !apierrors.IsConflict(err) {
			t.Errorf("status of another incarnation: %v, want Conflict", err)
		}
	})
	t.Run("a removed pod is not written again", func(t *testing.T) {
		if err := pods.RemovePod("default", "web", created.UID); err != nil {
			t.Fatal(err)
		}
		if err := pods.UpdatePodStatus(stale); !apierrors.IsNotFound(err) {
			t.Errorf("status after removal: %v, want NotFound", err)
		}
	})
}

func TestRemovePodLeavesAPodOfTheSameNameMadeSince(t *testing.T) {
	t.Parallel()
	pods, store := newPods(t)
	createPod(t, store, "web", "n1", nil)
	if err := pods.RemovePod("default", "web", "an-older-uid"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Pods.Get("default", "web"); err != nil {
		t.Errorf("the newer pod was removed: %v", err)
	}
}

type change struct {
	name string
	gone bool
	del  bool
}

func TestWatchPodsReportsThePodsOfItsNode(t *testing.T) {
	t.Parallel()
	pods, store := newPods(t)
	createPod(t, store, "before", "n1", nil)
	createPod(t, store, "elsewhere", "n2", nil)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan change, 16)
	if err := pods.WatchPods(ctx, "n1", func(p *corev1.Pod, gone bool) {
		got <- change{p.Name, gone, p.DeletionTimestamp != nil}
	}); err != nil {
		t.Fatal(err)
	}
	defer cancel()
	createPod(t, store, "after", "n1", nil)
	createPod(t, store, "other", "n2", nil)
	if err := pods.DeletePod(ctx, "default", "after", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.DeletePod(ctx, "default", "before", metav1.DeleteOptions{GracePeriodSeconds: ptr[int64](0)}); err != nil {
		t.Fatal(err)
	}
	want := []change{{"before", false, false}, {"after", false, false}, {"after", false, true}, {"before", true, false}}
	for i, w := range want {
		select {
		case c := <-got:
			if c != w {
				t.Fatalf("change %d: %+v, want %+v", i, c, w)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("change %d: none after 10s, want %+v", i, w)
		}
	}
}

func TestWatchPodsThatFellBehindListsAgain(t *testing.T) {
	t.Parallel()
	store := objstore.New(objstore.Options{WatchBuffer: 1})
	var logs strings.Builder
	var logMu sync.Mutex
	pods := NewPods(store, slog.New(slog.NewTextHandler(&lockedBuilder{mu: &logMu, b: &logs}, nil)))
	createPod(t, store, "stays", "n1", nil)
	createPod(t, store, "goes", "n1", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hold := make(chan struct{})
	got := make(chan change, 64)
	listed := 0
	if err := pods.WatchPods(ctx, "n1", func(p *corev1.Pod, gone bool) {
		listed++
		if listed == 3 { // the first change after the list: hold the watcher
			<-hold
		}
		got <- change{p.Name, gone, p.DeletionTimestamp != nil}
	}); err != nil {
		t.Fatal(err)
	}
	createPod(t, store, "first", "n1", nil) // the change the watcher is held on
	// Held, the watcher falls more than WatchBuffer changes behind.
	for i := range 3 {
		createPod(t, store, fmt.Sprintf("more-%d", i), "n1", nil)
	}
	if _, err := store.Pods.Delete("default", "goes"); err != nil {
		t.Fatal(err)
	}
	close(hold)
	want := map[change]bool{{"goes", true, false}: false, {"more-2", false, false}: false}
	deadline := time.After(10 * time.Second)
	for missing := len(want); missing > 0; {
		select {
		case c := <-got:
			if seen, ok := want[c]; ok && !seen {
				want[c] = true
				missing--
			}
		case <-deadline:
			t.Fatalf("after falling behind: want reported %v (true: seen)", want)
		}
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logs.String(), "fell behind") {
		t.Errorf("the watcher did not fall behind, the test proves nothing; log: %s", logs.String())
	}
}

type lockedBuilder struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

package objstore

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func TestWatchFromNowReplaysTheCurrentObjectsThenChanges(t *testing.T) {
	for _, rv := range []string{"", "0"} {
		t.Run(fmt.Sprintf("resourceVersion %q", rv), func(t *testing.T) {
			s := newTestStore(Options{})
			mustCreate(t, s, pod("default", "b"))
			mustCreate(t, s, pod("default", "a"))
			s.Pods.Delete("default", "b")

			ch, err := s.Pods.Watch(watchCtx(t), rv)
			if err != nil {
				t.Fatal(err)
			}
			mustCreate(t, s, pod("default", "c"))
			s.Pods.Modify("default", "a", func(p *corev1.Pod) error { p.Status.Phase = corev1.PodRunning; return nil })
			s.Pods.Delete("default", "c")

			evs, _ := drain(ch)
			want := []seen{
				{watch.Added, "a", "2"},
				{watch.Added, "c", "4"},
				{watch.Modified, "a", "5"},
				{watch.Deleted, "c", "6"},
			}
			if got := summarize(evs); !reflect.DeepEqual(got, want) {
				t.Errorf("events:\n got %v\nwant %v", got, want)
			}
		})
	}
}

func TestWatchFromAListVersionSeesOnlyLaterChanges(t *testing.T) {
	s := newTestStore(Options{})
	mustCreate(t, s, pod("default", "a"))
	_, rv := s.Pods.List("")
	mustCreate(t, s, pod("default", "b"))

	ch, err := s.Pods.Watch(watchCtx(t), rv)
	if err != nil {
		t.Fatal(err)
	}
	s.Pods.Delete("default", "a")
	evs, _ := drain(ch)
	want := []seen{{watch.Added, "b", "2"}, {watch.Deleted, "a", "3"}}
	if got := summarize(evs); !reflect.DeepEqual(got, want) {
		t.Errorf("events:\n got %v\nwant %v", got, want)
	}
}

func TestWatchIgnoresOtherCollectionsVersions(t *testing.T) {
	s := newTestStore(Options{})
	_, rv := s.Pods.List("")
	s.Events.Create(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "e"}})
	mustCreate(t, s, pod("default", "a"))
	ch, err := s.Pods.Watch(watchCtx(t), rv)
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := drain(ch)
	if got, want := summarize(evs), []seen{{watch.Added, "a", "2"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("events: got %v want %v", got, want)
	}
}

func TestWatchVersionErrors(t *testing.T) {
	s := newTestStore(Options{HistorySize: 3})
	for i := range 5 {
		mustCreate(t, s, pod("default", strconv.Itoa(i))) // versions 1..5, history keeps 3..5
	}
	tests := []struct {
		name     string
		rv       string
		code     int32
		reason   metav1.StatusReason
		message  string
		wantEvts int
	}{
		{"a version whose successors are compacted is 410 Expired", "1", http.StatusGone, metav1.StatusReasonExpired, "too old resource version: 1 (3)", 0},
		{"the newest compacted version still resumes", "2", 0, "", "", 3},
		{"a version in the history resumes", "4", 0, "", "", 1},
		{"the current version resumes with nothing", "5", 0, "", "", 0},
		{"a version from the future is a 504 Timeout", "6", http.StatusGatewayTimeout, metav1.StatusReasonTimeout, "Too large resource version: 6, current: 5", 0},
		{"a version that is not a number is a 400", "abc", http.StatusBadRequest, metav1.StatusReasonBadRequest, `invalid resource version "abc"`, 0},
		{"a negative version is a 400", "-1", http.StatusBadRequest, metav1.StatusReasonBadRequest, `invalid resource version "-1"`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, err := s.Pods.Watch(watchCtx(t), tt.rv)
			if tt.code == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if evs, _ := drain(ch); len(evs) != tt.wantEvts {
					t.Errorf("got %d events %v, want %d", len(evs), summarize(evs), tt.wantEvts)
				}
				return
			}
			st, ok := err.(apierrors.APIStatus)
			if !ok {
				t.Fatalf("err = %v (%T), want a StatusError", err, err)
			}
			if got := st.Status(); got.Code != tt.code || got.Reason != tt.reason || !strings.Contains(got.Message, tt.message) {
				t.Errorf("status = %d %s %q, want %d %s containing %q", got.Code, got.Reason, got.Message, tt.code, tt.reason, tt.message)
			}
		})
	}
}

func TestModifiedEventsCarryThePreviousState(t *testing.T) {
	s := newTestStore(Options{})
	mustCreate(t, s, pod("default", "a"))
	ch, _ := s.Pods.Watch(watchCtx(t), s.ResourceVersion())
	s.Pods.Modify("default", "a", func(p *corev1.Pod) error { p.Labels["app"] = "new"; return nil })
	s.Pods.Delete("default", "a")

	mod := next(t, ch)
	if mod.Type != watch.Modified || mod.Previous == nil || mod.Previous.Labels["app"] != "a" || mod.Object.Labels["app"] != "new" {
		t.Fatalf("modified event: %+v", mod)
	}
	del := next(t, ch)
	if del.Type != watch.Deleted || del.Previous != nil || del.Object.Labels["app"] != "new" || del.Object.ResourceVersion != "3" {
		t.Errorf("deleted event: type %s previous %v object labels %v rv %s", del.Type, del.Previous, del.Object.Labels, del.Object.ResourceVersion)
	}
}

func TestEachWatcherGetsItsOwnCopy(t *testing.T) {
	s := newTestStore(Options{})
	ctx := watchCtx(t)
	a, _ := s.Pods.Watch(ctx, "0")
	b, _ := s.Pods.Watch(ctx, "0")
	mustCreate(t, s, pod("default", "web"))
	ea, eb := next(t, a), next(t, b)
	ea.Object.Labels["app"] = "scribbled"
	if eb.Object.Labels["app"] != "web" {
		t.Errorf("watcher b saw watcher a's change: %v", eb.Object.Labels)
	}
	if got, _ := s.Pods.Get("default", "web"); got.Labels["app"] != "web" {
		t.Errorf("store saw a watcher's change: %v", got.Labels)
	}
}

func TestASlowWatcherIsDroppedWithExpiredAndWritersNeverWait(t *testing.T) {
	s := newTestStore(Options{WatchBuffer: 3})
	ctx := watchCtx(t)
	slow, _ := s.Pods.Watch(ctx, "0")
	fast, _ := s.Pods.Watch(ctx, "0")

	var fastSeen []Event[*corev1.Pod]
	for i := range 10 {
		// Nobody reads slow; if a write waited for it, this loop would hang.
		mustCreate(t, s, pod("default", strconv.Itoa(i)))
		fastSeen = append(fastSeen, next(t, fast))
	}

	evs, closed := drain(slow)
	if !closed {
		t.Fatal("slow watcher's channel is still open")
	}
	if len(evs) != 4 {
		t.Fatalf("slow watcher got %v, want 3 events then an error", summarize(evs))
	}
	last := evs[3]
	if last.Type != watch.Error || last.Status == nil || last.Status.Code != http.StatusGone || last.Status.Reason != metav1.StatusReasonExpired {
		t.Fatalf("last event = %+v, want ERROR 410 Expired", last)
	}
	if last.Status.Kind != "Status" || last.Status.APIVersion != "v1" {
		t.Errorf("error status kind %q apiVersion %q", last.Status.Kind, last.Status.APIVersion)
	}
	if len(fastSeen) != 10 || fastSeen[9].Object.Name != "9" {
		t.Errorf("fast watcher saw %v", summarize(fastSeen))
	}
	if n := s.Pods.Watchers(); n != 1 {
		t.Errorf("watchers = %d, want the fast one only", n)
	}
}

func TestABacklogDoesNotCountAgainstTheBuffer(t *testing.T) {
	s := newTestStore(Options{WatchBuffer: 2})
	for i := range 5 {
		mustCreate(t, s, pod("default", strconv.Itoa(i)))
	}
	ch, _ := s.Pods.Watch(watchCtx(t), "0")
	mustCreate(t, s, pod("default", "x"))
	mustCreate(t, s, pod("default", "y"))
	evs, closed := drain(ch)
	if closed || len(evs) != 7 {
		t.Errorf("got %v closed=%v, want 5 replayed + 2 live and still open", summarize(evs), closed)
	}
}

func TestCancellingTheContextClosesTheWatch(t *testing.T) {
	s := newTestStore(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	ch, _ := s.Pods.Watch(ctx, "0")
	if s.Pods.Watchers() != 1 {
		t.Fatalf("watchers = %d", s.Pods.Watchers())
	}
	cancel()
	for range ch { // closes promptly; the test deadline catches a hang
	}
	if n := s.Pods.Watchers(); n != 0 {
		t.Errorf("watchers = %d after cancel", n)
	}
	mustCreate(t, s, pod("default", "after")) // no send on a closed channel
}

func TestWatchWithADoneContextReturnsAClosedChannel(t *testing.T) {
	s := newTestStore(Options{})
	mustCreate(t, s, pod("default", "a"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ch, err := s.Pods.Watch(ctx, "0")
	if err != nil {
		t.Fatal(err)
	}
	evs, closed := drain(ch)
	if !closed || len(evs) != 1 {
		t.Errorf("got %v closed=%v, want the backlog then closed", summarize(evs), closed)
	}
	if s.Pods.Watchers() != 0 {
		t.Errorf("a watch on a done context stayed registered")
	}
}

func TestConcurrentWritersAndWatchersSeeOneOrder(t *testing.T) {
	s := newTestStore(Options{WatchBuffer: 100000})
	ctx := watchCtx(t)
	const writers, each, watchers = 4, 100, 3
	chans := make([]<-chan Event[*corev1.Pod], watchers)
	for i := range chans {
		chans[i], _ = s.Pods.Watch(ctx, "0")
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				name := fmt.Sprintf("w%d-%d", w, i)
				if _, err := s.Pods.Create(pod("default", name)); err != nil {
					t.Error(err)
				}
				if i%2 == 0 {
					s.Pods.Delete("default", name)
				}
			}
		})
	}
	results := make([][]seen, watchers)
	var readers sync.WaitGroup
	for i, ch := range chans {
		readers.Go(func() {
			want := writers*each + writers*each/2
			for len(results[i]) < want {
				ev := next(t, ch)
				results[i] = append(results[i], seen{ev.Type, ev.Object.Name, ev.Object.ResourceVersion})
			}
		})
	}
	wg.Wait()
	readers.Wait()
	for i := range results {
		last := uint64(0)
		for _, ev := range results[i] {
			v, _ := strconv.ParseUint(ev.rv, 10, 64)
			if v <= last {
				t.Fatalf("watcher %d: version %d after %d", i, v, last)
			}
			last = v
		}
		if !reflect.DeepEqual(results[i], results[0]) {
			t.Errorf("watcher %d saw a different order than watcher 0", i)
		}
	}
	if list, _ := s.Pods.List(""); len(list) != writers*each/2 {
		t.Errorf("%d pods left, want %d", len(list), writers*each/2)
	}
}

func TestTheHistoryWindowSlidesOverManyWrites(t *testing.T) {
	s := newTestStore(Options{HistorySize: 3})
	for i := range 20 {
		mustCreate(t, s, pod("default", strconv.Itoa(i)))
	}
	// Versions 18..20 are kept: 17 resumes, 16 does not.
	ch, err := s.Pods.Watch(watchCtx(t), "17")
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := drain(ch)
	if got, want := summarize(evs), []seen{{watch.Added, "17", "18"}, {watch.Added, "18", "19"}, {watch.Added, "19", "20"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("from 17: %v, want %v", got, want)
	}
	if _, err := s.Pods.Watch(watchCtx(t), "16"); !apierrors.IsResourceExpired(err) {
		t.Errorf("from 16: %v, want 410 Expired", err)
	}
}

package podworkers

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// worker is a pod worker on a goroutine of its own: it ends on Stop
// unless stubborn, and always on Force, as a real one's processes do.
type worker struct {
	key      Key
	set      *Set[*worker]
	stubborn bool
	stopCh   chan struct{}
	forceCh  chan struct{}

	mu              sync.Mutex
	stopped, forced bool
}

func newWorker(set *Set[*worker], name string, stubborn bool) *worker {
	return &worker{key: Key{"default", name}, set: set, stubborn: stubborn,
		stopCh: make(chan struct{}, 1), forceCh: make(chan struct{}, 1)}
}

func (w *worker) Stop()  { w.mu.Lock(); w.stopped = true; w.mu.Unlock(); w.stopCh <- struct{}{} }
func (w *worker) Force() { w.mu.Lock(); w.forced = true; w.mu.Unlock(); w.forceCh <- struct{}{} }

func (w *worker) run() {
	defer w.set.Done()
	for {
		select {
		case <-w.stopCh:
			if w.stubborn {
				continue
			}
		case <-w.forceCh:
		}
		w.set.Remove(w.key, w)
		return
	}
}

func TestDrainStopsEveryWorkerAndForcesWhatIsLeftAtTheDeadline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		stubborn   []bool // one worker each
		cancel     bool   // the drain's context ends at once
		wantErr    bool
		wantForced []bool
	}{
		{"no workers: nothing to wait for", nil, false, false, nil},
		{"workers that stop end the drain without error", []bool{false, false}, false, false, []bool{false, false}},
		{"a worker still running at the deadline is forced", []bool{false, true}, true, true, []bool{false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Set[*worker]
			var ws []*worker
			for i, stubborn := range tc.stubborn {
				w := newWorker(&s, string(rune('a'+i)), stubborn)
				if !s.Add(w.key, w) {
					t.Fatalf("Add %s refused before the drain", w.key.Name)
				}
				go w.run()
				ws = append(ws, w)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if tc.cancel {
				// Only the stubborn worker is left once the others ended.
				cancel()
			}
			err := s.Drain(ctx)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Drain = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr && !errors.Is(err, context.Canceled) {
				t.Fatalf("Drain = %v, want it to wrap the context's error", err)
			}
			for i, w := range ws {
				w.mu.Lock()
				stopped, forced := w.stopped, w.forced
				w.mu.Unlock()
				if !stopped {
					t.Errorf("worker %s was not told to stop", w.key.Name)
				}
				// A worker that ended on Stop may be gone before the
				// forcing; only the stubborn one is certain to be forced.
				if tc.wantForced[i] && !forced {
					t.Errorf("worker %s was not forced", w.key.Name)
				}
				if !tc.stubborn[i] && !tc.cancel && forced {
					t.Errorf("worker %s was forced in a drain that met its deadline", w.key.Name)
				}
			}
			if left := s.All(); len(left) != 0 {
				t.Fatalf("%d workers left after the drain", len(left))
			}
			if w := newWorker(&s, "late", false); s.Add(w.key, w) {
				t.Fatal("Add accepted a worker after the drain began")
			}
		})
	}
}

func TestRemoveDropsOnlyTheWorkerStillInPlace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		replaced bool // a new pod of the same name got a worker first
	}{
		{"the pod's own worker is removed", false},
		{"a new pod's worker of the same name stays", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Set[*worker]
			old := newWorker(&s, "web", false)
			s.Add(old.key, old)
			var current *worker
			if tc.replaced {
				current = newWorker(&s, "web", false)
				s.Add(current.key, current)
			}
			s.Remove(old.key, old)
			if got := s.Get(old.key); got != current {
				t.Fatalf("Get after Remove = %p, want %p", got, current)
			}
			s.Done()
			if tc.replaced {
				s.Done()
			}
		})
	}
}

// Package podworkers is the node agent's set of pod workers, as the
// kubelet keeps its own: one worker per pod name, none admitted once the
// node drains, and the drain itself — every worker told to stop
// gracefully, told to kill what is left once the drain's deadline passed,
// and waited for until each has ended.
package podworkers

import (
	"context"
	"fmt"
	"sync"
)

// Worker is what the set asks of a pod worker. Both calls must return at
// once (the worker acts on its own goroutine).
type Worker interface {
	comparable
	// Stop starts the pod's graceful termination.
	Stop()
	// Force kills every process of the pod at once.
	Force()
}

// Key names a pod on the node.
type Key struct{ Namespace, Name string }

// Set is the node's pod workers. The zero value is an empty set, ready to
// use; it must not be copied.
type Set[W Worker] struct {
	running sync.WaitGroup // one per worker added and not yet Done

	mu       sync.Mutex
	workers  map[Key]W
	draining bool
}

// Add makes w the worker of key and counts it as running until Done. It
// reports false, adding nothing, once the drain has begun.
func (s *Set[W]) Add(key Key, w W) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return false
	}
	if s.workers == nil {
		s.workers = map[Key]W{}
	}
	s.workers[key] = w
	s.running.Add(1)
	return true
}

// Remove drops w as the worker of key, if it still is (a new pod of the
// same name may have one already): its pod is gone.
func (s *Set[W]) Remove(key Key, w W) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.workers[key] == w {
		delete(s.workers, key)
	}
}

// Done is a worker's last word: its goroutine ends.
func (s *Set[W]) Done() { s.running.Done() }

// Get is the worker of key; the zero W when there is none.
func (s *Set[W]) Get(key Key) W {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.workers[key]
}

// All lists the workers.
func (s *Set[W]) All() []W {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]W, 0, len(s.workers))
	for _, w := range s.workers {
		out = append(out, w)
	}
	return out
}

// Drain admits no worker any more, stops every one and returns once each
// has ended. When ctx ends first, every worker left is forced and Drain
// still waits for them, returning an error that says so.
func (s *Set[W]) Drain(ctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	// No worker is added any more: these are all.
	for _, w := range s.All() {
		w.Stop()
	}
	done := make(chan struct{})
	go func() { s.running.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	for _, w := range s.All() {
		w.Force()
	}
	<-done
	return fmt.Errorf("graceful shutdown: %w; killing what is left", ctx.Err())
}

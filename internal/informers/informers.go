// Package informers runs client-go informers for a consumer that looks at
// their stores when something changed: the event handlers only ring a
// bell (a channel of one), so a burst of events costs one look, and the
// look, made by the consumer one at a time, sees the stores' latest state.
// The activator's backends (activator/kubebackends) and the gate's status
// source (gate/podapi) watch this way.
package informers

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/client-go/tools/cache"
)

// Started is a set of running informers and their bell.
type Started struct {
	changed chan struct{}
	cancel  context.CancelFunc
	running sync.WaitGroup
}

// Start adds the bell to every informer, runs them until Stop (or until
// ctx ends) and waits for their caches to sync. It returns an error when a
// handler cannot be added, or ctx.Err() when ctx ends before the caches
// sync; nothing is left running then.
func Start(ctx context.Context, infs ...cache.SharedIndexInformer) (*Started, error) {
	s := &Started{changed: make(chan struct{}, 1)}
	ring := func(any) {
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: ring, UpdateFunc: func(_, o any) { ring(o) }, DeleteFunc: ring}
	synced := make([]cache.InformerSynced, 0, len(infs))
	for _, inf := range infs {
		reg, err := inf.AddEventHandler(handler)
		if err != nil {
			return nil, fmt.Errorf("informer: %w", err)
		}
		synced = append(synced, reg.HasSynced)
	}
	runCtx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	for _, inf := range infs {
		s.running.Go(func() { inf.Run(runCtx.Done()) })
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		s.Stop()
		return nil, ctx.Err()
	}
	return s, nil
}

// Changed rings after an event. Take the ring before looking at the
// stores, so that an event during the look rings again.
func (s *Started) Changed() <-chan struct{} { return s.changed }

// Take clears a ring not yet received: the look that follows covers it.
func (s *Started) Take() {
	select {
	case <-s.changed:
	default:
	}
}

// Stop stops the informers and waits until they have returned.
func (s *Started) Stop() {
	s.cancel()
	s.running.Wait()
}

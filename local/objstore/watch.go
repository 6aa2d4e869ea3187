package objstore

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Event is one change seen by a watcher.
type Event[T Object] struct {
	// Type is watch.Added, watch.Modified, watch.Deleted, watch.Error, or
	// watch.Bookmark (see Bookmark and WatchOptions.SendInitialEvents; its
	// Object is empty but for resourceVersion and annotations).
	Type watch.EventType
	// Object is the new state; for Deleted the last state, stamped with the
	// version of the deletion. Each watcher gets its own copy.
	Object T
	// Previous is the state before a Modified change (zero otherwise), so a
	// filtering reader can tell an object that stopped matching from one
	// that never did, as the API server's watch cache does.
	Previous T
	// Status explains an Error event: a 410 Expired when the watcher fell
	// too far behind. The channel is closed right after it.
	Status *metav1.Status
}

type watcher[T Object] struct {
	ch   chan Event[T]
	stop func() bool // unregisters the context callback
}

// Watch streams the collection's changes after resourceVersion, in order.
//
// resourceVersion "" or "0" starts with the current objects as ADDED events;
// a version from List or from an earlier event replays the changes after it
// (410 Expired if they are no longer in the history; 400 if it is not a
// number; 504 Timeout if it is newer than the store). The channel is closed when ctx is done, or after an ERROR event
// when the watcher fell more than Options.WatchBuffer events behind. Writers
// never wait for a watcher.
func (c *Collection[T]) Watch(ctx context.Context, resourceVersion string) (<-chan Event[T], error) {
	from, err := parseRV(resourceVersion)
	if err != nil {
		return nil, err
	}
	return c.watch(ctx, from, false)
}

func tooLarge(from, cur uint64) error {
	// The API server waits a few seconds for such a version, then answers
	// 504 with this message; nothing here will catch up.
	return apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", from, cur), 1)
}

// watch starts a watch after version from (0: with the current objects);
// initialEnd adds the bookmark that ends the initial events.
func (c *Collection[T]) watch(ctx context.Context, from uint64, initialEnd bool) (<-chan Event[T], error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var backlog []Event[T]
	if from == 0 {
		objs := make([]T, 0, len(c.items))
		for _, o := range c.items {
			objs = append(objs, o)
		}
		sortByKey(objs)
		for _, o := range objs {
			backlog = append(backlog, Event[T]{Type: watch.Added, Object: o})
		}
	} else {
		if cur := c.store.rv.Load(); from > cur {
			return nil, tooLarge(from, cur)
		}
		if from < c.compacted {
			return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, c.compacted+1))
		}
		for _, ev := range c.history[c.head:] {
			if parseRVUnchecked(ev.Object.GetResourceVersion()) > from {
				backlog = append(backlog, ev)
			}
		}
	}
	if initialEnd {
		backlog = append(backlog, Event[T]{Type: watch.Bookmark,
			Object: c.bookmark(map[string]string{InitialEventsEndAnnotation: "true"})})
	}
	// One spare slot so that the overflow ERROR always fits.
	w := &watcher[T]{ch: make(chan Event[T], len(backlog)+c.store.opts.WatchBuffer+1)}
	for _, ev := range backlog {
		w.ch <- c.copyEvent(ev)
	}
	if ctx.Err() != nil {
		close(w.ch)
		return w.ch, nil
	}
	c.watchers[w] = struct{}{}
	w.stop = context.AfterFunc(ctx, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.watchers[w]; ok {
			delete(c.watchers, w)
			close(w.ch)
		}
	})
	return w.ch, nil
}

// broadcast hands ev to every watcher without blocking. Callers hold c.mu,
// which also makes this the only sender: len(ch) can only shrink meanwhile.
func (c *Collection[T]) broadcast(ev Event[T]) {
	for w := range c.watchers {
		if len(w.ch) < cap(w.ch)-1 {
			w.ch <- c.copyEvent(ev)
			continue
		}
		w.ch <- Event[T]{Type: watch.Error, Status: c.tooSlow()}
		close(w.ch)
		delete(c.watchers, w)
		w.stop()
	}
}

func (c *Collection[T]) tooSlow() *metav1.Status {
	st := apierrors.NewResourceExpired(fmt.Sprintf(
		"watch of %s dropped: the watcher fell more than %d changes behind; list again and watch from the list's resourceVersion",
		c.gr, c.store.opts.WatchBuffer)).ErrStatus
	st.Kind, st.APIVersion = "Status", "v1"
	return &st
}

func (c *Collection[T]) copyEvent(ev Event[T]) Event[T] {
	out := Event[T]{Type: ev.Type, Object: c.copyOut(ev.Object)}
	var zero T
	if ev.Type == watch.Modified && any(ev.Previous) != any(zero) {
		out.Previous = c.copyOut(ev.Previous)
	}
	return out
}

// Watchers is how many watches are open: for tests and metrics.
func (c *Collection[T]) Watchers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.watchers)
}

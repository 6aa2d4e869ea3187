package objstore

import (
	"context"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// InitialEventsEndAnnotation marks the BOOKMARK that ends the initial
// events of a watch that asked for them (the API server's watch-list,
// KEP-3157): every object that existed when the watch started has been
// sent as ADDED before it.
const InitialEventsEndAnnotation = metav1.InitialEventsAnnotationKey

// WatchOptions tune WatchWith.
type WatchOptions struct {
	// ResourceVersion is Watch's resourceVersion.
	ResourceVersion string
	// SendInitialEvents starts the watch with the current objects as ADDED,
	// whatever ResourceVersion says (which must still not be newer than the
	// store), then one BOOKMARK carrying InitialEventsEndAnnotation and the
	// version the current state is at.
	SendInitialEvents bool
}

// WatchWith is Watch with options.
func (c *Collection[T]) WatchWith(ctx context.Context, opts WatchOptions) (<-chan Event[T], error) {
	if !opts.SendInitialEvents {
		return c.Watch(ctx, opts.ResourceVersion)
	}
	from, err := parseRV(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if cur := c.store.rv.Load(); from > cur {
		return nil, tooLarge(from, cur)
	}
	return c.watch(ctx, 0, true)
}

// Bookmark queues a BOOKMARK on the watch whose channel is ch: an empty
// object carrying the store's current version, which tells the watcher that
// it has been sent every change of the collection up to that version (so it
// can resume from there even when the collection was quiet while others
// changed). It reports false when ch is not an open watch or its buffer has
// no room: bookmarks are a courtesy, never worth dropping a watcher for.
func (c *Collection[T]) Bookmark(ch <-chan Event[T]) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for w := range c.watchers {
		if (<-chan Event[T])(w.ch) != ch {
			continue
		}
		if len(w.ch) >= cap(w.ch)-1 {
			return false
		}
		w.ch <- Event[T]{Type: watch.Bookmark, Object: c.bookmark(nil)}
		return true
	}
	return false
}

// bookmark is an empty object of the collection's kind at the store's
// current version. Callers hold c.mu: every change of this collection up to
// that version has then been queued to every watcher.
func (c *Collection[T]) bookmark(annotations map[string]string) T {
	var zero T
	o := reflect.New(reflect.TypeOf(zero).Elem()).Interface().(T)
	o.GetObjectKind().SetGroupVersionKind(c.gvk)
	o.SetResourceVersion(formatRV(c.store.rv.Load()))
	o.SetAnnotations(annotations)
	return o
}

// Compact forgets every collection's history up to now and ends every open
// watch with a 410 Expired ERROR, as etcd's compaction does to watches of
// compacted revisions: their clients list again. A watch from a version
// older than now then fails with 410 as well.
func (s *Store) Compact() {
	s.Pods.compact()
	s.Events.compact()
	s.EndpointSlices.compact()
	s.Services.compact()
}

func (c *Collection[T]) compact() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.compacted = c.store.rv.Load()
	clear(c.history)
	c.history, c.head = c.history[:0], 0
	for w := range c.watchers {
		st := apierrors.NewResourceExpired("the watched history was compacted; list again").ErrStatus
		st.Kind, st.APIVersion = "Status", "v1"
		// The spare slot Watch keeps always has room for it.
		w.ch <- Event[T]{Type: watch.Error, Status: &st}
		close(w.ch)
		delete(c.watchers, w)
		w.stop()
	}
}

package objstore

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// Collection holds the objects of one kind, keyed by namespace/name.
// All methods are safe for concurrent use.
type Collection[T Object] struct {
	store *Store
	gvk   schema.GroupVersionKind
	gr    schema.GroupResource

	mu    sync.Mutex
	items map[key]T // stored snapshots: never mutated once stored
	// history[head:] holds the latest changes, oldest first, for watches
	// that resume from a version. compacted is the version of the newest
	// change that fell out of it: a watch from an older version cannot be
	// served.
	history   []Event[T]
	head      int
	compacted uint64
	watchers  map[*watcher[T]]struct{}
}

type key struct{ namespace, name string }

func newCollection[T Object](s *Store, gvk schema.GroupVersionKind, gr schema.GroupResource) *Collection[T] {
	return &Collection[T]{
		store:    s,
		gvk:      gvk,
		gr:       gr,
		items:    map[key]T{},
		watchers: map[*watcher[T]]struct{}{},
	}
}

// GroupVersionKind is the kind stamped into every object of the collection.
func (c *Collection[T]) GroupVersionKind() schema.GroupVersionKind { return c.gvk }

// GroupResource names the collection in errors, as the API server does.
func (c *Collection[T]) GroupResource() schema.GroupResource { return c.gr }

// Get returns a copy of the object, or a NotFound StatusError.
func (c *Collection[T]) Get(namespace, name string) (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, err := c.storedLocked(key{namespace, name})
	if err != nil {
		return cur, err
	}
	return c.copyOut(cur), nil
}

// storedLocked is the stored object itself (not a copy), or the API
// server's NotFound; the caller holds c.mu.
func (c *Collection[T]) storedLocked(k key) (T, error) {
	cur, ok := c.items[k]
	if !ok {
		var zero T
		return zero, apierrors.NewNotFound(c.gr, k.name)
	}
	return cur, nil
}

// List returns copies of the objects in namespace ("" for all namespaces),
// ordered by namespace then name, and the version a watch should start from
// to see every later change.
func (c *Collection[T]) List(namespace string) ([]T, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]T, 0, len(c.items))
	for k, obj := range c.items {
		if namespace == "" || k.namespace == namespace {
			out = append(out, c.copyOut(obj))
		}
	}
	sortByKey(out)
	return out, formatRV(c.store.rv.Load())
}

// Create stores a new object and returns it as stored: with uid,
// creationTimestamp (unless set), resourceVersion, apiVersion and kind, and
// a name made from generateName when the name is empty.
func (c *Collection[T]) Create(obj T) (T, error) {
	var zero T
	o, err := c.accept(obj, true)
	if err != nil {
		return zero, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if o.GetName() == "" {
		name, err := c.generateName(o.GetNamespace(), o.GetGenerateName())
		if err != nil {
			return zero, err
		}
		o.SetName(name)
	}
	k := key{o.GetNamespace(), o.GetName()}
	if _, ok := c.items[k]; ok {
		return zero, apierrors.NewAlreadyExists(c.gr, k.name)
	}
	o.SetUID(newUID())
	if ts := o.GetCreationTimestamp(); ts.IsZero() {
		// Like the API server, whole seconds: that is all the JSON carries.
		o.SetCreationTimestamp(metav1.NewTime(c.store.opts.Now().Truncate(1e9)))
	}
	c.commit(watch.Added, k, o, zero)
	return c.copyOut(o), nil
}

// Update replaces an existing object. A non-empty resourceVersion must match
// the stored one (else 409 Conflict); an empty one updates unconditionally.
// uid and creationTimestamp are the server's and are kept. An update that
// changes nothing returns the stored object without a new version or event.
func (c *Collection[T]) Update(obj T) (T, error) {
	var zero T
	o, err := c.accept(obj, false)
	if err != nil {
		return zero, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key{o.GetNamespace(), o.GetName()}
	cur, err := c.storedLocked(k)
	if err != nil {
		return zero, err
	}
	if rv := o.GetResourceVersion(); rv != "" && rv != cur.GetResourceVersion() {
		return zero, c.conflict(k.name)
	}
	return c.replace(k, cur, o), nil
}

// Put creates the object, or updates it unconditionally when it exists:
// what a node agent publishing its own state wants.
func (c *Collection[T]) Put(obj T) (T, error) {
	var zero T
	o, err := c.accept(obj, false)
	if err != nil {
		return zero, err
	}
	c.mu.Lock()
	k := key{o.GetNamespace(), o.GetName()}
	cur, ok := c.items[k]
	if ok {
		defer c.mu.Unlock()
		o.SetResourceVersion("")
		return c.replace(k, cur, o), nil
	}
	c.mu.Unlock()
	created, err := c.Create(obj)
	if apierrors.IsAlreadyExists(err) {
		// Another writer created it in between: this Put updates it.
		return c.Put(obj)
	}
	return created, err
}

// Modify applies change to a copy of the stored object and stores the
// result, all under the collection's lock, so concurrent writers cannot
// lose each other's changes (the API server's GuaranteedUpdate). change must
// not call the store; an error from it aborts the update and is returned.
func (c *Collection[T]) Modify(namespace, name string, change func(T) error) (T, error) {
	var zero T
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key{namespace, name}
	cur, err := c.storedLocked(k)
	if err != nil {
		return zero, err
	}
	o := c.copyOut(cur)
	if err := change(o); err != nil {
		return zero, err
	}
	if o.GetNamespace() != namespace || o.GetName() != name {
		return zero, apierrors.NewBadRequest(fmt.Sprintf("%s %q: Modify must not change the namespace or name", c.gr, name))
	}
	o.GetObjectKind().SetGroupVersionKind(c.gvk)
	return c.replace(k, cur, o), nil
}

// Delete removes the object and returns its last state, stamped with the
// version of the deletion (as the API server's DELETED event carries).
func (c *Collection[T]) Delete(namespace, name string) (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key{namespace, name}
	cur, err := c.storedLocked(k)
	if err != nil {
		return cur, err
	}
	gone := c.copyOut(cur)
	c.commit(watch.Deleted, k, gone, cur)
	return c.copyOut(gone), nil
}

// replace stores o in place of cur unless nothing but bookkeeping differs.
// Callers hold c.mu.
func (c *Collection[T]) replace(k key, cur, o T) T {
	o.SetUID(cur.GetUID())
	o.SetCreationTimestamp(cur.GetCreationTimestamp())
	o.SetResourceVersion(cur.GetResourceVersion())
	// Plain reflect.DeepEqual, not apimachinery's Semantic: its equivalences
	// (Quantity, Time) cannot differ between deep copies of what the writer
	// sent, and it allocates on every status write.
	if reflect.DeepEqual(cur, o) {
		return c.copyOut(cur)
	}
	c.commit(watch.Modified, k, o, cur)
	return c.copyOut(o)
}

// commit stamps the next version into o (which the collection now owns),
// applies the change and tells history and watchers. Callers hold c.mu.
func (c *Collection[T]) commit(t watch.EventType, k key, o, previous T) {
	o.SetResourceVersion(formatRV(c.store.rv.Add(1)))
	if t == watch.Deleted {
		delete(c.items, k)
	} else {
		c.items[k] = o
	}
	ev := Event[T]{Type: t, Object: o}
	if t == watch.Modified {
		ev.Previous = previous
	}
	c.record(ev)
	c.broadcast(ev)
}

func (c *Collection[T]) record(ev Event[T]) {
	c.history = append(c.history, ev)
	if len(c.history)-c.head <= c.store.opts.HistorySize {
		return
	}
	c.compacted = parseRVUnchecked(c.history[c.head].Object.GetResourceVersion())
	c.history[c.head] = Event[T]{}
	c.head++
	// Shift the window back to the front only once it has moved a whole
	// history's length: each write stays O(1) on average.
	if c.head >= c.store.opts.HistorySize {
		n := copy(c.history, c.history[c.head:])
		clear(c.history[n:])
		c.history = c.history[:n]
		c.head = 0
	}
}

func (c *Collection[T]) conflict(name string) error {
	return apierrors.NewConflict(c.gr, name,
		fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
}

func (c *Collection[T]) copyOut(obj T) T { return obj.DeepCopyObject().(T) }

func sortByKey[T Object](objs []T) {
	slices.SortFunc(objs, func(a, b T) int {
		if n := strings.Compare(a.GetNamespace(), b.GetNamespace()); n != 0 {
			return n
		}
		return strings.Compare(a.GetName(), b.GetName())
	})
}

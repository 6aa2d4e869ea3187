package apiserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podgate/podgate/local/apiserver/resources"
	"github.com/podgate/podgate/local/objstore"
	"github.com/podgate/podgate/local/printers"
)

// collection serves one objstore collection as a Kubernetes resource.
type collection[T objstore.Object] struct {
	res        resources.Resource
	store      *objstore.Collection[T]
	selectable []string
	fieldSet   func(T) fields.Set
	// itemsTyped: list items carry apiVersion and kind. The API server
	// leaves them out of built-in lists and keeps them in custom resources'
	// (Knative's) lists.
	itemsTyped bool
	writes     writes[T]
	// bookmarkEvery is how often a watch that allows bookmarks gets one.
	bookmarkEvery time.Duration
	// table is the resource's Table (`kubectl get`'s columns); now is the
	// clock of its AGE cells.
	table printers.TableOf[T]
	now   func() time.Time
	log   *slog.Logger
}

// list answers a list or, with ?watch=true, a watch of the collection in
// the path's namespace (all namespaces without one).
func (c *collection[T]) list(w http.ResponseWriter, r *http.Request) {
	q, err := parseListQuery(r.URL.Query(), c.selectable)
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	tr, err := askedTable(r)
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	ns := r.PathValue("ns")
	if q.watch {
		c.watch(w, r, ns, q, tr)
		return
	}
	// Every list is served from the latest state, which satisfies each of
	// the API server's resourceVersion semantics for lists ("", "0", "not
	// older than N").
	objs, rv := c.store.List(ns)
	items := make([]T, 0, len(objs))
	for _, o := range objs {
		if c.matches(o, q) {
			if tr != nil {
				items = append(items, o)
				continue
			}
			if !c.itemsTyped {
				o.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
			}
			items = append(items, o)
		}
	}
	if tr != nil {
		writeJSON(w, http.StatusOK, c.asTable(items, rv, tr, false))
		return
	}
	writeJSON(w, http.StatusOK, listBody[T]{
		TypeMeta: metav1.TypeMeta{APIVersion: c.res.GroupVersion().String(), Kind: c.res.Kind + "List"},
		ListMeta: metav1.ListMeta{ResourceVersion: rv},
		Items:    items,
	})
}

// listBody has the JSON shape of PodList, EventList, … for any item type.
type listBody[T any] struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []T `json:"items"`
}

func (c *collection[T]) get(w http.ResponseWriter, r *http.Request) {
	tr, err := askedTable(r)
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	o, err := c.store.Get(r.PathValue("ns"), r.PathValue("name"))
	if err != nil {
		writeError(w, c.log, err)
		return
	}
	if tr != nil {
		writeJSON(w, http.StatusOK, c.asTable([]T{o}, o.GetResourceVersion(), tr, false))
		return
	}
	writeJSON(w, http.StatusOK, o)
}

func (c *collection[T]) matches(o T, q listQuery) bool {
	return q.labels.Matches(labels.Set(o.GetLabels())) && q.fields.Matches(c.fieldSet(o))
}

// watchEvent is metav1.WatchEvent's JSON shape with a typed object.
type watchEvent struct {
	Type   watch.EventType `json:"type"`
	Object any             `json:"object"`
}

func (c *collection[T]) watch(w http.ResponseWriter, r *http.Request, ns string, q listQuery, tr *tableRequest) {
	ctx := r.Context()
	if q.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, q.timeout)
		defer cancel()
	}
	events, err := c.store.WatchWith(ctx, objstore.WatchOptions{ResourceVersion: q.resourceVersion, SendInitialEvents: q.sendInitialEvents})
	if err != nil && !apierrors.IsResourceExpired(err) {
		writeError(w, c.log, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	tables := c.watchTables(tr)
	send := func(ev watchEvent) bool {
		if enc.Encode(tables(ev)) != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if err != nil {
		// Like the API server's watch cache: a version that is too old is
		// answered 200 with one ERROR event, which clients take as "list
		// again".
		st := statusOf(err)
		send(watchEvent{Type: watch.Error, Object: st})
		return
	}
	// Headers now, so the client knows the watch is established before the
	// first change.
	if rc.Flush() != nil {
		return
	}
	var tick <-chan time.Time
	if q.bookmarks && c.bookmarkEvery > 0 {
		t := time.NewTicker(c.bookmarkEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-tick:
			// Queued behind the changes already sent to this watch, so its
			// version is one the client has seen everything up to.
			c.store.Bookmark(events)
		case ev, open := <-events:
			if !open {
				return
			}
			out, ok := c.filter(ev, ns, q)
			if ok && !send(out) {
				return
			}
		}
	}
}

// watchTables turns each watch event's object into a one-row Table when
// the watch asked for Tables (kubectl get -w), as the API server does: the
// column definitions only in the first, errors (a Status) as they are.
func (c *collection[T]) watchTables(tr *tableRequest) func(watchEvent) watchEvent {
	if tr == nil {
		return func(ev watchEvent) watchEvent { return ev }
	}
	headersSent := false
	return func(ev watchEvent) watchEvent {
		obj, ok := ev.Object.(T)
		if !ok {
			return ev
		}
		ev.Object = c.asTable([]T{obj}, obj.GetResourceVersion(), tr, headersSent)
		headersSent = true
		return ev
	}
}

// filter applies the request's namespace and selectors to one change. An
// object that stops matching is sent as DELETED and one that starts
// matching as ADDED, as the API server's watch does.
func (c *collection[T]) filter(ev objstore.Event[T], ns string, q listQuery) (watchEvent, bool) {
	switch ev.Type {
	case watch.Error:
		return watchEvent{Type: watch.Error, Object: ev.Status}, true
	case watch.Bookmark:
		// The end of the initial events is always sent (the client waits
		// for it); other bookmarks only to clients that allow them.
		return watchEvent{Type: watch.Bookmark, Object: ev.Object}, q.bookmarks || q.sendInitialEvents
	}
	if ns != "" && ev.Object.GetNamespace() != ns {
		return watchEvent{}, false
	}
	now := c.matches(ev.Object, q)
	if ev.Type != watch.Modified {
		return watchEvent{Type: ev.Type, Object: ev.Object}, now
	}
	var zero T
	before := any(ev.Previous) != any(zero) && c.matches(ev.Previous, q)
	switch {
	case before && now:
		return watchEvent{Type: watch.Modified, Object: ev.Object}, true
	case before:
		return watchEvent{Type: watch.Deleted, Object: ev.Object}, true
	case now:
		return watchEvent{Type: watch.Added, Object: ev.Object}, true
	}
	return watchEvent{}, false
}

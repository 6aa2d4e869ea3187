package apiserver

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// listQuery is what a list or watch request asks for.
type listQuery struct {
	labels          labels.Selector
	fields          fields.Selector
	resourceVersion string
	watch           bool
	timeout         time.Duration // 0: until the client or server goes away
	// bookmarks: allowWatchBookmarks=true.
	bookmarks bool
	// sendInitialEvents: a watch-list request (client-go's WatchListClient).
	sendInitialEvents bool
}

// parseListQuery reads the query parameters the API server takes on a
// list. limit is accepted and ignored: podgate answers every list in one
// page with no continue token, which is a valid answer to a paginated
// request; so a continue token can only be one it never issued (400).
func parseListQuery(q url.Values, selectable []string) (listQuery, error) {
	out := listQuery{labels: labels.Everything(), fields: fields.Everything(), resourceVersion: q.Get("resourceVersion")}
	if s := q.Get("labelSelector"); s != "" {
		sel, err := labels.Parse(s)
		if err != nil {
			return out, apierrors.NewBadRequest(fmt.Sprintf("labelSelector %q: %v", s, err))
		}
		out.labels = sel
	}
	if s := q.Get("fieldSelector"); s != "" {
		sel, err := fields.ParseSelector(s)
		if err != nil {
			return out, apierrors.NewBadRequest(fmt.Sprintf("fieldSelector %q: %v", s, err))
		}
		for _, r := range sel.Requirements() {
			if !slices.Contains(selectable, r.Field) {
				// The API server's words for an unknown field label.
				return out, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", r.Field))
			}
		}
		out.fields = sel
	}
	if s := q.Get("watch"); s != "" {
		w, err := strconv.ParseBool(s)
		if err != nil {
			return out, apierrors.NewBadRequest(fmt.Sprintf("watch %q: want true or false", s))
		}
		out.watch = w
	}
	if s := q.Get("continue"); s != "" {
		return out, apierrors.NewBadRequest(fmt.Sprintf("continue %q: not a continue token this server issued", s))
	}
	for _, b := range []struct {
		name string
		into *bool
	}{{"allowWatchBookmarks", &out.bookmarks}, {"sendInitialEvents", &out.sendInitialEvents}} {
		if s := q.Get(b.name); s != "" {
			v, err := strconv.ParseBool(s)
			if err != nil {
				return out, apierrors.NewBadRequest(fmt.Sprintf("%s %q: want true or false", b.name, s))
			}
			*b.into = v
		}
	}
	if out.sendInitialEvents {
		// The API server's rules for a watch-list request.
		switch {
		case !out.watch:
			return out, apierrors.NewBadRequest("sendInitialEvents is only allowed on a watch")
		case q.Get("resourceVersionMatch") != "NotOlderThan":
			return out, apierrors.NewBadRequest(`sendInitialEvents requires resourceVersionMatch=NotOlderThan`)
		case !out.bookmarks:
			return out, apierrors.NewBadRequest("sendInitialEvents requires allowWatchBookmarks=true")
		}
	}
	if s := q.Get("timeoutSeconds"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return out, apierrors.NewBadRequest(fmt.Sprintf("timeoutSeconds %q: want a non-negative integer", s))
		}
		out.timeout = time.Duration(n) * time.Second
	}
	return out, nil
}

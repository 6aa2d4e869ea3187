package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podgate/podgate/local/apiserver/resources"
)

// WatchEvent is one change from a watch: metav1.WatchEvent with the object
// left as JSON for the caller to decode into its type.
type WatchEvent struct {
	Type   watch.EventType `json:"type"`
	Object json.RawMessage `json:"object"`
}

// Decode unmarshals the event's object.
func (e WatchEvent) Decode(into any) error {
	if err := json.Unmarshal(e.Object, into); err != nil {
		return fmt.Errorf("decoding %s watch event: %w", e.Type, err)
	}
	return nil
}

// Watcher reads a watch stream.
type Watcher struct {
	body io.ReadCloser
	dec  *json.Decoder
	ctx  context.Context
}

// Watch opens a watch of r. The server has accepted it when Watch returns.
func (c *Client) Watch(ctx context.Context, r resources.Resource, opts ListOptions) (*Watcher, error) {
	resp, err := c.do(ctx, http.MethodGet, r.Path(opts.Namespace, ""), opts.query(true), nil)
	if err != nil {
		return nil, err
	}
	if err := checkResponse(resp, http.MethodGet, r, ""); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return &Watcher{body: resp.Body, dec: json.NewDecoder(resp.Body), ctx: ctx}, nil
}

// Next returns the next change. An ERROR event is returned as its
// StatusError (410 Expired: list again and watch from the new list). io.EOF
// means the server ended the watch; ctx's error that the caller did.
func (w *Watcher) Next() (WatchEvent, error) {
	var ev WatchEvent
	if err := w.dec.Decode(&ev); err != nil {
		if w.ctx.Err() != nil {
			return ev, w.ctx.Err()
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return ev, io.EOF
		}
		return ev, fmt.Errorf("reading watch stream: %w", err)
	}
	if ev.Type == watch.Error {
		var st metav1.Status
		if err := json.Unmarshal(ev.Object, &st); err != nil {
			return ev, fmt.Errorf("decoding watch error: %w", err)
		}
		return ev, &apierrors.StatusError{ErrStatus: st}
	}
	return ev, nil
}

// Close ends the watch.
func (w *Watcher) Close() error { return w.body.Close() }

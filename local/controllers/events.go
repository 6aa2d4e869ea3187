package controllers

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/local/objstore"
)

// Events is the events API of the embedded store, as the node agent
// writes to it (node.EventWriter).
type Events struct {
	store *objstore.Store
}

// NewEvents writes the events of store.
func NewEvents(store *objstore.Store) *Events { return &Events{store: store} }

// CreateEvent stores ev; AlreadyExists when its name is taken.
func (e *Events) CreateEvent(ev *corev1.Event) error {
	_, err := e.store.Events.Create(ev)
	return err
}

// UpdateEvent applies change to the stored event; NotFound when it is
// gone.
func (e *Events) UpdateEvent(namespace, name string, change func(*corev1.Event)) error {
	_, err := e.store.Events.Modify(namespace, name, func(ev *corev1.Event) error {
		change(ev)
		return nil
	})
	return err
}

// DeleteEvent removes an event.
func (e *Events) DeleteEvent(namespace, name string) error {
	_, err := e.store.Events.Delete(namespace, name)
	return err
}

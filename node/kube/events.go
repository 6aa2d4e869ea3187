package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// Events writes the node agent's events to the core/v1 events API
// (node.EventWriter).
//
// The Node authorizer lets a node create, update and patch events, but
// not get, list or delete them. So a repeat (a count bumped) is a patch of
// the copy this writer created, kept here, and an event past the agent's
// limit is only forgotten: the API server removes events after its
// --event-ttl (an hour by default), as it does the kubelet's.
type Events struct {
	client corev1client.EventsGetter

	mu      sync.Mutex
	created map[types.NamespacedName]*corev1.Event
}

// NewEvents writes events through client.
func NewEvents(client corev1client.EventsGetter) *Events {
	return &Events{client: client, created: map[types.NamespacedName]*corev1.Event{}}
}

// CreateEvent creates ev; AlreadyExists when its name is taken.
func (e *Events) CreateEvent(ev *corev1.Event) error {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	out, err := e.client.Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.created[types.NamespacedName{Namespace: out.Namespace, Name: out.Name}] = out
	e.mu.Unlock()
	return nil
}

// UpdateEvent applies change to an event this writer created and patches
// the difference (the kubelet's recorder patches count, lastTimestamp and
// message the same way). NotFound when it is not one of this writer's
// events, or the API server expired it.
func (e *Events) UpdateEvent(namespace, name string, change func(*corev1.Event)) error {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	e.mu.Lock()
	cur := e.created[key]
	e.mu.Unlock()
	if cur == nil {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "events"}, name)
	}
	next := cur.DeepCopy()
	change(next)
	oldJSON, err := json.Marshal(cur)
	if err != nil {
		return err
	}
	newJSON, err := json.Marshal(next)
	if err != nil {
		return err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, corev1.Event{})
	if err != nil {
		return fmt.Errorf("event %s/%s: patch: %w", namespace, name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	out, err := e.client.Events(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case err == nil:
		e.created[key] = out
	case apierrors.IsNotFound(err):
		delete(e.created, key)
	}
	return err
}

// DeleteEvent forgets an event: a node may not delete events, the API
// server's TTL removes it.
func (e *Events) DeleteEvent(namespace, name string) error {
	e.mu.Lock()
	delete(e.created, types.NamespacedName{Namespace: namespace, Name: name})
	e.mu.Unlock()
	return nil
}

package objstore

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newTestStore(opts Options) *Store {
	if opts.Now == nil {
		opts.Now = func() time.Time { return epoch.Add(250 * time.Millisecond) }
	}
	return New(opts)
}

func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "ghcr.io/podgate/testapp"}}},
	}
}

func mustCreate(t *testing.T, s *Store, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	out, err := s.Pods.Create(p)
	if err != nil {
		t.Fatalf("create %s/%s: %v", p.Namespace, p.Name, err)
	}
	return out
}

// next reads one event or fails after a generous deadline (the store never
// makes a watcher wait; the deadline only turns a bug into a failure).
func next[T Object](t *testing.T, ch <-chan Event[T]) Event[T] {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed, want an event")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
	panic("unreachable")
}

// drain reads what is buffered right now, then expects the channel to be
// closed (closed reports whether it was).
func drain[T Object](ch <-chan Event[T]) (evs []Event[T], closed bool) {
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return evs, true
			}
			evs = append(evs, ev)
		default:
			return evs, false
		}
	}
}

type seen struct {
	typ  watch.EventType
	name string
	rv   string
}

func summarize[T Object](evs []Event[T]) []seen {
	out := make([]seen, 0, len(evs))
	for _, ev := range evs {
		s := seen{typ: ev.Type}
		if ev.Type != watch.Error {
			s.name, s.rv = ev.Object.GetName(), ev.Object.GetResourceVersion()
		}
		out = append(out, s)
	}
	return out
}

func watchCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

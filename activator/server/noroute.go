package server

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	kuberecord "k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/activator/kubebackends"
)

// A Service the front door cannot route (pods without a gate and no port
// to serve HTTP on) gets 503 with the reason at once, and, on a cluster
// (Config.ServiceEvents), a Warning Event on the Service, where `kubectl
// describe service` shows it: the request's client is often not the
// Service's author.

// Event reason and source of the activator's Events.
const (
	ReasonNoRoute   = "NoRoute"
	EventComponent  = "podgate-activator"
	noRouteInterval = time.Minute
)

// serviceEvents records NoRoute Events, at most one per Service and
// reason per noRouteInterval: every refused request would be one
// otherwise. (client-go's correlator would fold repeats into a count, but
// only after writing and patching them.)
type serviceEvents struct {
	feed        *kubebackends.Feed
	clock       clock.Clock
	broadcaster kuberecord.EventBroadcaster
	recorder    kuberecord.EventRecorder

	mu   sync.Mutex
	last map[string]time.Time // NAMESPACE/NAME, then the reason
}

func newServiceEvents(client kubernetes.Interface, feed *kubebackends.Feed, clk clock.Clock) *serviceEvents {
	b := kuberecord.NewBroadcaster(kuberecord.WithContext(context.Background()))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return &serviceEvents{
		feed: feed, clock: clk, broadcaster: b,
		recorder: b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: EventComponent}),
		last:     map[string]time.Time{},
	}
}

// noRoute records why Service namespace/name cannot be routed, unless
// the same was recorded less than noRouteInterval ago. It says whether
// it did.
func (s *serviceEvents) noRoute(namespace, name string, why *activator.UnroutableError) bool {
	key := namespace + "/" + name + "\x00" + why.Reason
	now := s.clock.Now()
	s.mu.Lock()
	if t, ok := s.last[key]; ok && now.Sub(t) < noRouteInterval {
		s.mu.Unlock()
		return false
	}
	for k, t := range s.last {
		if now.Sub(t) >= noRouteInterval {
			delete(s.last, k) // bounded by the Services refused in the last interval
		}
	}
	s.last[key] = now
	s.mu.Unlock()
	s.recorder.Event(s.feed.ServiceRef(namespace, name), corev1.EventTypeWarning, ReasonNoRoute, why.Reason)
	return true
}

// stop ends the broadcaster; an Event not written yet is dropped.
func (s *serviceEvents) stop() { s.broadcaster.Shutdown() }

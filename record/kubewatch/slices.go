package kubewatch

import (
	"maps"
	"slices"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/podgate/podgate/record"
)

// sliceSeen is what was last recorded of one EndpointSlice: its Service
// and its endpoints by address.
type sliceSeen struct {
	service   string
	endpoints map[string]endpointSeen
}

// endpointSeen is what was last recorded of one endpoint.
type endpointSeen struct {
	pod                         string
	ready, serving, terminating *bool
}

func (e endpointSeen) same(o endpointSeen) bool {
	eq := func(x, y *bool) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return e.pod == o.pod && eq(e.ready, o.ready) && eq(e.serving, o.serving) && eq(e.terminating, o.terminating)
}

// sliceLocked records each endpoint of s that appeared or whose
// conditions changed, and each that left. An endpoint is known by its
// addresses, as Kubernetes knows it; the pod comes from its targetRef.
func (w *Watcher) sliceLocked(s *discoveryv1.EndpointSlice, now time.Time) {
	k := key(&s.ObjectMeta)
	var old map[string]endpointSeen
	if seen := w.slices[k]; seen != nil {
		old = seen.endpoints
	}
	svc := s.Labels[discoveryv1.LabelServiceName]
	cur := make(map[string]endpointSeen, len(s.Endpoints))
	for _, ep := range s.Endpoints {
		addr := strings.Join(ep.Addresses, ",")
		e := endpointSeen{ready: copyBool(ep.Conditions.Ready), serving: copyBool(ep.Conditions.Serving), terminating: copyBool(ep.Conditions.Terminating)}
		if ref := ep.TargetRef; ref != nil && ref.Kind == "Pod" {
			e.pod = ref.Name
		}
		cur[addr] = e
		if prev, ok := old[addr]; ok && prev.same(e) {
			continue
		}
		w.recordEndpoint(s.Namespace, svc, s.Name, addr, e, false, now)
	}
	for _, addr := range slices.Sorted(maps.Keys(old)) {
		if _, ok := cur[addr]; !ok {
			w.recordEndpoint(s.Namespace, svc, s.Name, addr, old[addr], true, now)
		}
	}
	w.slices[k] = &sliceSeen{service: svc, endpoints: cur}
}

// sliceGoneLocked records every endpoint of a deleted slice as removed.
func (w *Watcher) sliceGoneLocked(k string, now time.Time) {
	seen := w.slices[k]
	if seen == nil {
		return
	}
	ns, name, _ := strings.Cut(k, "/")
	for _, addr := range slices.Sorted(maps.Keys(seen.endpoints)) {
		w.recordEndpoint(ns, seen.service, name, addr, seen.endpoints[addr], true, now)
	}
	delete(w.slices, k)
}

func (w *Watcher) recordEndpoint(ns, svc, slice, addr string, e endpointSeen, removed bool, now time.Time) {
	ep := &record.Endpoint{Service: svc, Slice: slice, Address: addr, Removed: removed}
	if !removed {
		ep.Ready, ep.Serving, ep.Terminating = e.ready, e.serving, e.terminating
	}
	w.cfg.Sink.Record(record.Fact{Time: now, Kind: record.KindEndpoint, Namespace: ns, Pod: e.pod, Endpoint: ep})
}

func copyBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}

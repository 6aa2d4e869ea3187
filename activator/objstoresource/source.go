// Package objstoresource feeds an activator target from podgate's local
// object store: the EndpointSlices of a service give the pods and their
// readiness, the Pods give each pod's spec for the fast-path rule.
package objstoresource

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/objstore"
	"github.com/podgate/podgate/wire"
)

// GatePort is the gate's traffic and health port (queue-proxy's 8012).
const GatePort = wire.GatePort

// ServiceNameLabel ties an EndpointSlice to its service.
const ServiceNameLabel = discoveryv1.LabelServiceName

// Source is an activator.Backends over a Store.
type Source struct {
	Store     *objstore.Store
	Namespace string
	// Service is the kubernetes.io/service-name label of the slices (the
	// revision name for a Knative Service, the workload name otherwise).
	Service string
	// Port is the gate's port on each pod (default GatePort). The slices'
	// own ports name the application's; the activator always talks to the
	// gate.
	Port   int32
	Logger *slog.Logger
}

var _ activator.Backends = (*Source)(nil)

// Pods streams snapshots: one from a consistent list, then one after each
// change that concerns the service. A watch that falls behind is
// re-listed. A slow reader only ever gets the latest snapshot.
func (s *Source) Pods(ctx context.Context) <-chan []activator.Pod {
	out := make(chan []activator.Pod)
	go s.run(ctx, out)
	return out
}

type state struct {
	slices map[string]*discoveryv1.EndpointSlice
	pods   map[string]*corev1.Pod
}

func (s *Source) run(ctx context.Context, out chan<- []activator.Pod) {
	defer close(out)
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	name := s.Namespace + "/" + s.Service
	var (
		pending, last []activator.Pod
		dirty, sent   bool
	)
	for ctx.Err() == nil {
		round, endRound := context.WithCancel(ctx)
		st, slicesCh, podsCh, err := s.listAndWatch(round)
		if err != nil {
			endRound()
			if apierrors.IsResourceExpired(err) {
				continue // the history moved on between list and watch
			}
			log.Error("endpoint source: watch failed", "service", name, "err", err)
			return
		}
		publish := func() {
			snap := s.snapshot(st)
			if sent && equal(snap, last) {
				dirty = false // back to what the reader has
				return
			}
			pending, dirty = snap, true
		}
		publish()
		for slicesCh != nil && podsCh != nil {
			var send chan<- []activator.Pod
			if dirty {
				send = out
			}
			select {
			case <-ctx.Done():
			case send <- pending:
				last, sent, dirty = pending, true, false
			case ev, ok := <-slicesCh:
				if !ok || ev.Type == watch.Error {
					slicesCh = nil
					continue
				}
				applyEvent(st.slices, ev.Type, ev.Object)
				publish()
			case ev, ok := <-podsCh:
				if !ok || ev.Type == watch.Error {
					podsCh = nil
					continue
				}
				applyEvent(st.pods, ev.Type, ev.Object)
				publish()
			}
			if ctx.Err() != nil {
				break
			}
		}
		endRound()
		if ctx.Err() == nil {
			log.Info("endpoint source: watch fell behind, listing again", "service", name)
		}
	}
}

// listAndWatch lists each kind and watches it from its list's version, so
// no change falls between a list and its watch. The watches end with ctx.
func (s *Source) listAndWatch(ctx context.Context) (*state, <-chan objstore.Event[*discoveryv1.EndpointSlice], <-chan objstore.Event[*corev1.Pod], error) {
	slices, slicesRV := s.Store.EndpointSlices.List(s.Namespace)
	pods, podsRV := s.Store.Pods.List(s.Namespace)
	st := &state{slices: map[string]*discoveryv1.EndpointSlice{}, pods: map[string]*corev1.Pod{}}
	for _, sl := range slices {
		st.slices[sl.Name] = sl
	}
	for _, p := range pods {
		st.pods[p.Name] = p
	}
	sch, err := s.Store.EndpointSlices.Watch(ctx, slicesRV)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("watch endpointslices in %q: %w", s.Namespace, err)
	}
	pch, err := s.Store.Pods.Watch(ctx, podsRV)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("watch pods in %q: %w", s.Namespace, err)
	}
	return st, sch, pch, nil
}

func applyEvent[T interface{ GetName() string }](m map[string]T, typ watch.EventType, obj T) {
	if typ == watch.Deleted {
		delete(m, obj.GetName())
		return
	}
	m[obj.GetName()] = obj
}

// snapshot is the service's pods, sorted by name. A pod listed in two
// slices (moving between them) counts once, ready if either says so.
func (s *Source) snapshot(st *state) []activator.Pod {
	port := s.Port
	if port == 0 {
		port = GatePort
	}
	byName := map[string]activator.Pod{}
	for _, sl := range st.slices {
		if sl.Labels[ServiceNameLabel] != s.Service {
			continue
		}
		for _, ep := range sl.Endpoints {
			if len(ep.Addresses) == 0 {
				continue
			}
			p := activator.Pod{
				Name: ep.Addresses[0],
				Addr: net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(port))),
				// The API: a nil ready condition is unknown, to be read as
				// ready; nil terminating is not terminating.
				Ready:       ep.Conditions.Ready == nil || *ep.Conditions.Ready,
				Terminating: ep.Conditions.Terminating != nil && *ep.Conditions.Terminating,
			}
			if ref := ep.TargetRef; ref != nil && ref.Kind == "Pod" {
				p.Name = ref.Name
				if pod := st.pods[ref.Name]; pod != nil && (ref.UID == "" || ref.UID == pod.UID) {
					p.FastPath = pod.DeletionTimestamp == nil && activator.FastPathAllowed(&pod.Spec)
					if port := gateAdminPort(&pod.Spec); port > 0 {
						p.AdminAddr = net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(port)))
					}
				}
			}
			if prev, ok := byName[p.Name]; ok {
				p.Ready = p.Ready || prev.Ready
				p.Terminating = p.Terminating || prev.Terminating
			}
			byName[p.Name] = p
		}
	}
	out := make([]activator.Pod, 0, len(byName))
	for _, p := range byName {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// gateAdminPort is the admin port the pod's gate declares, 0 without a
// gate: where the target tells it that it gets no more traffic.
func gateAdminPort(spec *corev1.PodSpec) int32 {
	return wire.GateAdminPortOf(wire.GateContainer(spec))
}

func equal(a, b []activator.Pod) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

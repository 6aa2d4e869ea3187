// Package kubebackends feeds an activator target from the Kubernetes API,
// through client-go informers: the EndpointSlices of a service give the
// pods and their readiness, the Pods give each pod's spec for the
// fast-path rule. The same code serves `podgate run` (its local control
// API) and a cluster (the API server).
package kubebackends

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/gate/contract"
)

// GatePort is the gate's traffic and health port (queue-proxy's 8012).
const GatePort = contract.GatePort

// ServiceNameLabel ties an EndpointSlice to its service.
const ServiceNameLabel = discoveryv1.LabelServiceName

// Snapshot is a Service's pods as the informers see them, and, when
// endpoints exist but none can be routed, why (Unroutable).
type Snapshot struct {
	Pods       []activator.Pod
	Unroutable *activator.UnroutableError
}

// stream sends snap's snapshots to out: the first at once, then one after
// each ring of changed that changes it, until ctx ends. A slow reader
// only ever gets the latest snapshot.
func stream(ctx context.Context, out chan<- Snapshot, changed <-chan struct{}, snap func() Snapshot) {
	var (
		pending, last Snapshot
		dirty, sent   bool
	)
	publish := func() {
		select {
		case <-changed: // this snapshot covers it
		default:
		}
		next := snap()
		if sent && equal(next, last) {
			dirty = false // back to what the reader has
			return
		}
		pending, dirty = next, true
	}
	publish()
	for {
		var send chan<- Snapshot
		if dirty {
			send = out
		}
		select {
		case <-ctx.Done():
			return
		case send <- pending:
			last, sent, dirty = pending, true, false
		case <-changed:
			publish()
		}
	}
}

// podsOf is the pods of service's slices, sorted by name, their gates on
// port (GatePort when 0), and a pod without a gate on the Service's own
// target port (ports.go), marked Direct. A pod listed in two slices
// (moving between them) counts once, ready if either says so. podByName
// finds an endpoint's pod in the slice's namespace (nil: not known, yet
// or any more); withAdmin gives each pod its gate's admin address,
// where the target tells the gate that it sends it nothing any more.
//
// When endpoints exist but none can be routed (pods without a gate and
// no port to reach them on), the second result says why; no endpoints at
// all is not an error (the pods may be coming).
func podsOf(service string, port int32, sls []*discoveryv1.EndpointSlice, podByName func(namespace, name string) *corev1.Pod, withAdmin bool) ([]activator.Pod, *activator.UnroutableError) {
	if port == 0 {
		port = GatePort
	}
	r := resolver{gatePort: port, slices: sls}
	byName := map[string]activator.Pod{}
	for _, sl := range sls {
		if sl.Labels[ServiceNameLabel] != service {
			continue
		}
		for _, ep := range sl.Endpoints {
			if len(ep.Addresses) == 0 {
				continue
			}
			p, ok := r.endpoint(sl, &ep, podByName, withAdmin)
			if !ok {
				continue
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
	if len(out) == 0 && r.unroutable != nil {
		return out, &activator.UnroutableError{Reason: r.unroutable.Error()}
	}
	return out, nil
}

// resolver finds each endpoint's address; it picks the Service port for
// pods without a gate once, on the first such pod.
type resolver struct {
	gatePort int32
	slices   []*discoveryv1.EndpointSlice
	picked   bool
	name     string
	pickErr  error
	// unroutable is why the last pod without a gate had no port.
	unroutable error
}

// endpoint is ep as a backend; false: not one (a pod without a gate and
// a port).
func (r *resolver) endpoint(sl *discoveryv1.EndpointSlice, ep *discoveryv1.Endpoint, podByName func(namespace, name string) *corev1.Pod, withAdmin bool) (activator.Pod, bool) {
	ip := ep.Addresses[0]
	p := activator.Pod{
		Name: ip,
		Addr: net.JoinHostPort(ip, strconv.Itoa(int(r.gatePort))),
		// The API: a nil ready condition is unknown, to be read as
		// ready; nil terminating is not terminating.
		Ready:       ep.Conditions.Ready == nil || *ep.Conditions.Ready,
		Terminating: ep.Conditions.Terminating != nil && *ep.Conditions.Terminating,
	}
	ref := ep.TargetRef
	if ref == nil || ref.Kind != "Pod" {
		// Written by hand, with no pod to look at: a gate, as before
		// pods without one were served.
		return p, true
	}
	p.Name = ref.Name
	pod := podByName(sl.Namespace, ref.Name)
	if pod == nil || (ref.UID != "" && ref.UID != pod.UID) {
		// Not known yet: on the gate's port, which only a gate answers
		// (the target health-checks it before any request), until the
		// pod's arrival says whether it has one.
		return p, true
	}
	// The pod's deletion, seen before the EndpointSlice controller marks
	// its endpoint terminating: no new request from now on, and its gate
	// told sooner.
	p.Terminating = p.Terminating || pod.DeletionTimestamp != nil
	if !hasGate(&pod.Spec) {
		return r.direct(sl, p, ip)
	}
	p.FastPath = pod.DeletionTimestamp == nil && activator.FastPathAllowed(&pod.Spec)
	if port := gateAdminPort(&pod.Spec); port > 0 && withAdmin {
		p.AdminAddr = net.JoinHostPort(ip, strconv.Itoa(int(port)))
		p.AdminToken = contract.AdminTokenOf(contract.GateContainer(&pod.Spec))
	}
	return p, true
}

// direct is p, a pod without a gate, on the Service's target port as its
// slice lists it, Kubernetes' ready condition alone deciding.
func (r *resolver) direct(sl *discoveryv1.EndpointSlice, p activator.Pod, ip string) (activator.Pod, bool) {
	if !r.picked {
		r.picked = true
		r.name, r.pickErr = servicePort(r.slices)
	}
	if r.pickErr != nil {
		r.unroutable = fmt.Errorf("cannot route Service %s/%s: its pods have no podgate gate, and %w", sl.Namespace, sl.Labels[ServiceNameLabel], r.pickErr)
		return p, false
	}
	port := slicePort(sl, r.name)
	if port == 0 {
		r.unroutable = fmt.Errorf("cannot route Service %s/%s: pod %s has no podgate gate, and its EndpointSlice %s gives no port for Service port %q (a named targetPort the pod's containers do not declare?)", sl.Namespace, sl.Labels[ServiceNameLabel], p.Name, sl.Name, r.name)
		return p, false
	}
	p.Direct = true
	p.Addr = net.JoinHostPort(ip, strconv.Itoa(int(port)))
	return p, true
}

// hasGate says whether the pod has a gate that answers the activator's
// health check on the gate port: podgate's, as injection adds it (the
// container named contract.GateContainerName), or a Knative revision's
// queue sidecar (contract.KnativeQueueContainerName: Knative's
// queue-proxy, or podgate's gate started as it).
func hasGate(spec *corev1.PodSpec) bool {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			if cs[i].Name == contract.GateContainerName || cs[i].Name == contract.KnativeQueueContainerName {
				return true
			}
		}
	}
	return false
}

// gateAdminPort is the admin port the pod's gate declares, 0 without a
// gate: where the target tells it that it gets no more traffic.
func gateAdminPort(spec *corev1.PodSpec) int32 {
	return contract.GateAdminPortOf(contract.GateContainer(spec))
}

func equal(a, b Snapshot) bool {
	if (a.Unroutable == nil) != (b.Unroutable == nil) || (a.Unroutable != nil && *a.Unroutable != *b.Unroutable) {
		return false
	}
	return slices.Equal(a.Pods, b.Pods)
}

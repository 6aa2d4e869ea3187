// Package kubebackends feeds an activator target from the Kubernetes API,
// through client-go informers: the EndpointSlices of a service give the
// pods and their readiness, the Pods give each pod's spec for the
// fast-path rule. The same code serves `podgate run` (its local control
// API) and a cluster (the API server).
package kubebackends

import (
	"context"
	"net"
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

// stream sends snap's snapshots to out: the first at once, then one after
// each ring of changed that changes it, until ctx ends. A slow reader
// only ever gets the latest snapshot.
func stream(ctx context.Context, out chan<- []activator.Pod, changed <-chan struct{}, snap func() []activator.Pod) {
	var (
		pending, last []activator.Pod
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
		var send chan<- []activator.Pod
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
// port (GatePort when 0). A pod listed in two slices (moving between
// them) counts once, ready if either says so. podByName finds an
// endpoint's pod in the slice's namespace (nil: not known, yet or any
// more); withAdmin gives each
// pod its gate's admin address, where the target tells the gate that it
// sends it nothing any more.
func podsOf(service string, port int32, slices []*discoveryv1.EndpointSlice, podByName func(namespace, name string) *corev1.Pod, withAdmin bool) []activator.Pod {
	if port == 0 {
		port = GatePort
	}
	byName := map[string]activator.Pod{}
	for _, sl := range slices {
		if sl.Labels[ServiceNameLabel] != service {
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
				if pod := podByName(sl.Namespace, ref.Name); pod != nil && (ref.UID == "" || ref.UID == pod.UID) {
					p.FastPath = pod.DeletionTimestamp == nil && activator.FastPathAllowed(&pod.Spec)
					// The pod's deletion, seen before the EndpointSlice
					// controller marks its endpoint terminating: no new
					// request from now on, and its gate told sooner.
					p.Terminating = p.Terminating || pod.DeletionTimestamp != nil
					if port := gateAdminPort(&pod.Spec); port > 0 && withAdmin {
						p.AdminAddr = net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(port)))
						p.AdminToken = contract.AdminTokenOf(contract.GateContainer(&pod.Spec))
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
	return contract.GateAdminPortOf(contract.GateContainer(spec))
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

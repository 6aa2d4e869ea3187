package kubebackends

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/local/objstore"
)

// port is an EndpointSlice port as the EndpointSlice controller writes
// it: the Service port's name, the resolved target port, TCP unless said.
func port(name string, n int32, proto ...corev1.Protocol) discoveryv1.EndpointPort {
	p := discoveryv1.EndpointPort{Name: ptr.To(name), Port: ptr.To(n), Protocol: ptr.To(corev1.ProtocolTCP)}
	if len(proto) > 0 {
		p.Protocol = &proto[0]
	}
	return p
}

// portSlice is slice web-N of Service web with one ready endpoint per pod
// (pod NAME at 10.0.0.I) and ports.
func portSlice(name string, pods []string, ports ...discoveryv1.EndpointPort) *discoveryv1.EndpointSlice {
	sl := slice(name, "web")
	for i, p := range pods {
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{"10.0.0." + string(rune('1'+i))},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: p},
		})
	}
	sl.Ports = ports
	return sl
}

func TestServicePortIsTheOnlyTCPPortElseTheOneNamedHTTP(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ports   [][]discoveryv1.EndpointPort // per slice
		want    string
		wantErr string
	}{
		{name: "one unnamed port", ports: [][]discoveryv1.EndpointPort{{port("", 8080)}}, want: ""},
		{name: "one named port, whatever its name", ports: [][]discoveryv1.EndpointPort{{port("web", 8080)}}, want: "web"},
		{name: "several ports: the one named http", ports: [][]discoveryv1.EndpointPort{{port("metrics", 9090), port("http", 8080), port("grpc", 9000)}}, want: "http"},
		{name: "a UDP port does not count", ports: [][]discoveryv1.EndpointPort{{port("dns", 53, corev1.ProtocolUDP), port("web", 8080)}}, want: "web"},
		{name: "the same port in two slices is one port", ports: [][]discoveryv1.EndpointPort{{port("web", 8080)}, {port("web", 8081)}}, want: "web"},
		{name: "ports across slices add up", ports: [][]discoveryv1.EndpointPort{{port("a", 1)}, {port("http", 2)}}, want: "http"},
		{name: "several ports, none named http", ports: [][]discoveryv1.EndpointPort{{port("b", 81), port("a", 80)}}, wantErr: `it has 2 ports (a, b) and none is named "http"`},
		{name: "no port (a headless Service without ports)", ports: [][]discoveryv1.EndpointPort{nil}, wantErr: "no TCP port"},
		{name: "only UDP", ports: [][]discoveryv1.EndpointPort{{port("dns", 53, corev1.ProtocolUDP)}}, wantErr: "no TCP port"},
		{name: "no slice at all", wantErr: "no TCP port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sls []*discoveryv1.EndpointSlice
			for i, ps := range tc.ports {
				sls = append(sls, portSlice("web-"+string(rune('a'+i)), nil, ps...))
			}
			got, err := servicePort(sls)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("servicePort = %q, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("servicePort = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestPodsWithoutAGateGoToTheServiceTargetPortPodsWithAGateToTheGate(t *testing.T) {
	gated := func(name string) *corev1.Pod { return pod(name, nil) }
	plain := func(name string) *corev1.Pod {
		p := pod(name, nil)
		p.Spec.Containers = p.Spec.Containers[:2] // no gate container: not injected
		return p
	}
	for _, tc := range []struct {
		name       string
		pods       []*corev1.Pod
		slices     []*discoveryv1.EndpointSlice
		want       []activator.Pod
		unroutable string
	}{{
		name:   "a pod with a gate goes to the gate's port, whatever the Service's ports",
		pods:   []*corev1.Pod{gated("g")},
		slices: []*discoveryv1.EndpointSlice{portSlice("web-1", []string{"g"}, port("a", 80), port("b", 81))},
		want:   []activator.Pod{{Name: "g", Addr: "10.0.0.1:8012", Ready: true, FastPath: true}},
	}, {
		name: "a Knative revision's pod, its queue sidecar the gate, goes to the gate's port",
		pods: []*corev1.Pod{func() *corev1.Pod {
			p := plain("k")
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: contract.KnativeQueueContainerName})
			return p
		}()},
		slices: []*discoveryv1.EndpointSlice{portSlice("web-1", []string{"k"}, port("http", 8012), port("https", 8112))},
		want:   []activator.Pod{{Name: "k", Addr: "10.0.0.1:8012", Ready: true, FastPath: true}},
	}, {
		name:   "a pod without a gate goes to its slice's port (the resolved targetPort), no fast path",
		pods:   []*corev1.Pod{plain("p")},
		slices: []*discoveryv1.EndpointSlice{portSlice("web-1", []string{"p"}, port("web", 8080))},
		want:   []activator.Pod{{Name: "p", Addr: "10.0.0.1:8080", Direct: true, Ready: true}},
	}, {
		name: "a named targetPort resolved per pod: each slice its own number",
		pods: []*corev1.Pod{plain("p"), plain("q")},
		slices: []*discoveryv1.EndpointSlice{
			portSlice("web-1", []string{"p"}, port("http", 8080)),
			func() *discoveryv1.EndpointSlice {
				sl := portSlice("web-2", []string{"q"}, port("http", 9090))
				sl.Endpoints[0].Addresses = []string{"10.0.0.2"}
				return sl
			}(),
		},
		want: []activator.Pod{
			{Name: "p", Addr: "10.0.0.1:8080", Direct: true, Ready: true},
			{Name: "q", Addr: "10.0.0.2:9090", Direct: true, Ready: true},
		},
	}, {
		name:   "several ports: the one named http",
		pods:   []*corev1.Pod{plain("p")},
		slices: []*discoveryv1.EndpointSlice{portSlice("web-1", []string{"p"}, port("metrics", 9090), port("http", 8080))},
		want:   []activator.Pod{{Name: "p", Addr: "10.0.0.1:8080", Direct: true, Ready: true}},
	}, {
		name:   "mixed: each pod on its own kind of port",
		pods:   []*corev1.Pod{gated("g"), plain("p")},
		slices: []*discoveryv1.EndpointSlice{portSlice("web-1", []string{"g", "p"}, port("web", 8080))},
		want: []activator.Pod{
			{Name: "g", Addr: "10.0.0.1:8012", Ready: true, FastPath: true},
			{Name: "p", Addr: "10.0.0.2:8080", Direct: true, Ready: true},
		},
	}, {
		name:       "several ports, none named http: unroutable, with the reason",
		pods:       []*corev1.Pod{plain("p")},
		slices:     []*discoveryv1.EndpointSlice{portSlice("web-1", []string{"p"}, port("a", 80), port("b", 81))},
		want:       []activator.Pod{},
		unroutable: `cannot route Service default/web: its pods have no podgate gate, and it has 2 ports (a, b) and none is named "http"`,
	}, {
		name:       "no port: unroutable",
		pods:       []*corev1.Pod{plain("p")},
		slices:     []*discoveryv1.EndpointSlice{portSlice("web-1", []string{"p"})},
		want:       []activator.Pod{},
		unroutable: "no TCP port",
	}, {
		name: "a pod whose slice lacks the chosen port (its containers do not declare the named targetPort) is left out",
		pods: []*corev1.Pod{plain("p"), plain("q")},
		slices: []*discoveryv1.EndpointSlice{
			portSlice("web-1", []string{"p"}, port("http", 8080)),
			func() *discoveryv1.EndpointSlice {
				sl := portSlice("web-2", []string{"q"})
				sl.Endpoints[0].Addresses = []string{"10.0.0.2"}
				return sl
			}(),
		},
		want: []activator.Pod{{Name: "p", Addr: "10.0.0.1:8080", Direct: true, Ready: true}},
	}, {
		name:       "only such pods: unroutable, naming the pod and the port",
		pods:       []*corev1.Pod{plain("p"), plain("q")},
		slices:     []*discoveryv1.EndpointSlice{portSlice("web-1", []string{"q"}), portSlice("web-2", nil, port("http", 8080))},
		want:       []activator.Pod{},
		unroutable: `pod q has no podgate gate, and its EndpointSlice web-1 gives no port for Service port "http"`,
	}, {
		name:   "a Service with a gate and without ports is routed as before",
		pods:   []*corev1.Pod{gated("g")},
		slices: []*discoveryv1.EndpointSlice{portSlice("web-1", []string{"g"})},
		want:   []activator.Pod{{Name: "g", Addr: "10.0.0.1:8012", Ready: true, FastPath: true}},
	}, {
		name:   "no endpoints at all is not unroutable: pods may come",
		slices: []*discoveryv1.EndpointSlice{portSlice("web-1", nil, port("a", 80), port("b", 81))},
		want:   []activator.Pod{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			byName := func(namespace, name string) *corev1.Pod {
				for _, p := range tc.pods {
					if p.Namespace == namespace && p.Name == name {
						return p
					}
				}
				return nil
			}
			got, why := podsOf("web", 0, tc.slices, byName, false)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("pods\n got %+v\nwant %+v", got, tc.want)
			}
			switch {
			case tc.unroutable == "" && why != nil:
				t.Errorf("unroutable: %q; want routable", why.Reason)
			case tc.unroutable != "" && (why == nil || !strings.Contains(why.Reason, tc.unroutable)):
				t.Errorf("unroutable: %v; want a reason with %q", why, tc.unroutable)
			}
		})
	}
}

// TestServiceRefCarriesTheServiceUIDFromTheSliceOwner: an Event on a
// Service shows in `kubectl describe service` only with its UID, which
// the activator learns from its EndpointSlices' owner reference without
// reading Services.
func TestServiceRefCarriesTheServiceUIDFromTheSliceOwner(t *testing.T) {
	store := objstore.New(objstore.Options{})
	sl := portSlice("web-1", nil, port("http", 8080))
	sl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: "u-1", Controller: ptr.To(true)}}
	put(t, store.EndpointSlices, sl)
	c := startFeed(t, store, Options{Namespace: ns})
	want := &corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: ns, Name: "web", UID: "u-1"}
	if got := c.ServiceRef(ns, "web"); !reflect.DeepEqual(got, want) {
		t.Errorf("ServiceRef(web) = %+v, want %+v", got, want)
	}
	// No slice: the reference without a UID (the Event still names it).
	want = &corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: ns, Name: "gone"}
	if got := c.ServiceRef(ns, "gone"); !reflect.DeepEqual(got, want) {
		t.Errorf("ServiceRef(gone) = %+v, want %+v", got, want)
	}
}

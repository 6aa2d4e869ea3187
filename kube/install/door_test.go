package install

import (
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/podgate/podgate/kube/deploy"
)

func slice(name string, port int32, portName string, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: deploy.Namespace},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(port)}},
		Endpoints:   eps,
	}
}

func endpoint(ip string, ready *bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
}

func TestTheFrontDoorTakesTheActivatorsReadyEndpointsInTurn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		slices []*discoveryv1.EndpointSlice
		want   []string // picks in order; nil: an error
	}{
		{"no slice: no target", nil, nil},
		{"ready endpoints in turn, in address order, on the http port",
			[]*discoveryv1.EndpointSlice{
				slice("a", 8080, "http", endpoint("10.244.0.3", ptr.To(true)), endpoint("10.244.0.2", nil)),
				slice("b", 8080, "http", endpoint("10.244.0.4", ptr.To(true))),
			},
			[]string{"10.244.0.2:8080", "10.244.0.3:8080", "10.244.0.4:8080", "10.244.0.2:8080"}},
		{"an endpoint not ready (terminating, say) gets nothing",
			[]*discoveryv1.EndpointSlice{slice("a", 8080, "http", endpoint("10.244.0.2", ptr.To(false)), endpoint("10.244.0.3", ptr.To(true)))},
			[]string{"10.244.0.3:8080", "10.244.0.3:8080"}},
		{"only unready endpoints: no target",
			[]*discoveryv1.EndpointSlice{slice("a", 8080, "http", endpoint("10.244.0.2", ptr.To(false)))}, nil},
		{"a slice without the http port is not the traffic port's",
			[]*discoveryv1.EndpointSlice{slice("a", 9090, "http-metrics", endpoint("10.244.0.2", ptr.To(true)))}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := cache.NewStore(cache.MetaNamespaceKeyFunc)
			for _, s := range tc.slices {
				if err := store.Add(s); err != nil {
					t.Fatal(err)
				}
			}
			d := &frontDoor{store: store}
			if tc.want == nil {
				if got, err := d.pick(); err == nil || !strings.Contains(err.Error(), "has no ready endpoint") {
					t.Errorf("pick() = %q, %v; want no ready endpoint", got, err)
				}
				return
			}
			for i, want := range tc.want {
				if got, err := d.pick(); err != nil || got != want {
					t.Errorf("pick %d = %q, %v; want %s", i, got, err, want)
				}
			}
		})
	}
}

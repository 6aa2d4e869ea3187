package install

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/podgate/podgate/kube/deploy"
	"github.com/podgate/podgate/node/netns"
)

// activatorPort is the name of the activator Service's traffic port in
// kube/deploy/base; its EndpointSlices list the pods' port under that name.
const activatorPort = "http"

// frontDoor forwards the connections of the host's front door listener
// to the activator's pods, as kube-proxy would route its Service (there
// is none here): each connection to one of the ready endpoints of
// Service podgate-activator, in turn, as its EndpointSlices list them
// (an informer keeps them). A connection while none is ready is closed.
type frontDoor struct {
	store cache.Store
	next  atomic.Uint64
}

// ServeFrontDoor runs the front door on ln until ctx ends, reading the
// activator's EndpointSlices with rc.
func ServeFrontDoor(ctx context.Context, ln net.Listener, rc *rest.Config, log *slog.Logger) error {
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("front door: %w", err)
	}
	inf := discoveryinformers.NewFilteredEndpointSliceInformer(cs, deploy.Namespace, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = discoveryv1.LabelServiceName + "=" + deploy.Activator })
	d := &frontDoor{store: inf.GetStore()}
	var running sync.WaitGroup
	infCtx, stop := context.WithCancel(ctx)
	running.Go(func() { inf.RunWithContext(infCtx) })
	defer func() { stop(); running.Wait() }()
	fw := &netns.Forwarder{Pick: d.pick, Log: log}
	return fw.Serve(ctx, ln)
}

// pick is the next ready endpoint of the activator, HOST:PORT.
func (d *frontDoor) pick() (string, error) {
	var addrs []string
	for _, o := range d.store.List() {
		s, ok := o.(*discoveryv1.EndpointSlice)
		if !ok {
			continue
		}
		port := int32(0)
		for _, p := range s.Ports {
			if p.Name != nil && *p.Name == activatorPort && p.Port != nil {
				port = *p.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, ep := range s.Endpoints {
			if !endpointReady(ep) {
				continue
			}
			for _, a := range ep.Addresses {
				addrs = append(addrs, net.JoinHostPort(a, strconv.Itoa(int(port))))
			}
		}
	}
	if len(addrs) == 0 {
		return "", errors.New("front door: the activator (Service " + deploy.Namespace + "/" + deploy.Activator + ") has no ready endpoint")
	}
	// Sorted: the store's order changes, the turns should not.
	slices.Sort(addrs)
	return addrs[int(d.next.Add(1)-1)%len(addrs)], nil
}

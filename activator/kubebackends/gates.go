package kubebackends

import (
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/gate/contract"
)

// Gate is a pod whose gate takes the activator's word that it gets
// nothing more (its PODGATE_ONLY_ROUTER is the activator's), as Gates
// finds it.
type Gate struct {
	// Pod names the pod (Name is the pod's name, as /unrouted?pod= wants
	// it) and its gate's admin address and token; Terminating is its
	// deletion.
	Pod activator.Pod
	UID types.UID
	// Followed: a Service the activator has open (a target, whose feed
	// streams it) lists the pod. That target tells the gate itself, once
	// its own requests to the pod have ended.
	Followed bool
}

// Gates are the pods whose gates believe the activator (PODGATE_ONLY_ROUTER
// activator) and that have an IP. On a cluster where the activator is the
// only router, a terminating one that no open target follows gets no
// request from this activator: its gate may be told at once (package
// activator/server does).
func (c *Feed) Gates() []Gate {
	var out []Gate
	for _, o := range c.pods.GetStore().List() {
		p, ok := o.(*corev1.Pod)
		if !ok || p.Status.PodIP == "" {
			continue
		}
		g := contract.GateContainer(&p.Spec)
		port := contract.GateAdminPortOf(g)
		if port == 0 || !believesActivator(g) {
			continue
		}
		out = append(out, Gate{
			Pod: activator.Pod{
				Name:        p.Name,
				AdminAddr:   net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port))),
				AdminToken:  contract.AdminTokenOf(g),
				Terminating: p.DeletionTimestamp != nil,
			},
			UID:      p.UID,
			Followed: c.followed(p),
		})
	}
	return out
}

// GatesChanged is rung (capacity one) when a pod turns terminating, goes,
// or gets its IP: Gates may have changed.
func (c *Feed) GatesChanged() <-chan struct{} { return c.gatesChanged }

func (c *Feed) ringGates() {
	select {
	case c.gatesChanged <- struct{}{}:
	default:
	}
}

// followed says whether a Service with an open stream lists the pod.
func (c *Feed) followed(p *corev1.Pod) bool {
	objs, err := c.slices.GetIndexer().ByIndex(byPod, p.Namespace+"/"+p.Name)
	if err != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range objs {
		sl, ok := o.(*discoveryv1.EndpointSlice)
		if !ok {
			continue
		}
		keys, _ := serviceIndex(sl)
		for _, k := range keys {
			if len(c.subs[k]) > 0 {
				return true
			}
		}
	}
	return false
}

func believesActivator(g *corev1.Container) bool {
	for _, e := range g.Env {
		if e.Name == contract.EnvOnlyRouter && e.ValueFrom == nil {
			return e.Value == contract.OnlyRouterActivator
		}
	}
	return false
}

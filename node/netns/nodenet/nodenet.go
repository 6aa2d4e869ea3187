package nodenet

import (
	"net/netip"

	"github.com/podgate/podgate/podnet"
	"github.com/podgate/podgate/runtime"
)

// Network is a podnet cluster network as the node agent's
// runtime.PodNetwork.
type Network struct{ c *podnet.Cluster }

var _ runtime.PodNetwork = (*Network)(nil)

// New adapts c. Closing c (after the agent's Shutdown) removes what is
// left of the pods' networks.
func New(c *podnet.Cluster) *Network { return &Network{c: c} }

// Add gives the pod keyed podKey a network namespace, veth and address.
func (n *Network) Add(podKey string) (runtime.PodNet, error) {
	p, err := n.c.AddPod(podKey)
	if err != nil {
		return nil, err
	}
	return podNet{p}, nil
}

// Capacity is how many pods the cluster's CIDR holds, and the CIDR.
func (n *Network) Capacity() (int, netip.Prefix) { return n.c.Capacity(), n.c.CIDR() }

// HostIP is the node's address as the pods reach it, the bridge's (their
// gateway): runtime.Options.HostIP, the pods' status.hostIP.
func (n *Network) HostIP() netip.Addr { return n.c.Gateway() }

// podNet is one pod's podnet.PodNet as a runtime.PodNet.
type podNet struct{ p *podnet.PodNet }

func (p podNet) IP() netip.Addr { return p.p.IP() }

// Enter runs fn on the calling goroutine's thread inside the pod's
// namespace. podnet.PodNet.Do keeps the promise runtime.PodNet asks for:
// a thread that cannot come back stays locked, and the error wraps
// podnet.ErrNetnsNotRestored.
func (p podNet) Enter(fn func() error) error { return p.p.Do(fn) }

func (p podNet) Close() error { return p.p.Close() }

package nodenet

import (
	"net/netip"

	"github.com/podgate/podgate/node"
	"github.com/podgate/podgate/node/netns"
)

// Network is a podnet cluster network as the node agent's
// node.PodNetwork.
type Network struct{ c *netns.Cluster }

var _ node.PodNetwork = (*Network)(nil)

// New adapts c. Closing c (after the agent's Shutdown) removes what is
// left of the pods' networks.
func New(c *netns.Cluster) *Network { return &Network{c: c} }

// Add gives the pod keyed podKey a network namespace, veth and address.
func (n *Network) Add(podKey string) (node.PodNet, error) {
	p, err := n.c.AddPod(podKey)
	if err != nil {
		return nil, err
	}
	return podNet{p}, nil
}

// Capacity is how many pods the cluster's CIDR holds, and the CIDR.
func (n *Network) Capacity() (int, netip.Prefix) { return n.c.Capacity(), n.c.CIDR() }

// HostIP is the node's address as the pods reach it, the bridge's (their
// gateway): node.Options.HostIP, the pods' status.hostIP.
func (n *Network) HostIP() netip.Addr { return n.c.Gateway() }

// podNet is one pod's netns.PodNet as a node.PodNet.
type podNet struct{ p *netns.PodNet }

func (p podNet) IP() netip.Addr { return p.p.IP() }

// Enter runs fn on the calling goroutine's thread inside the pod's
// namespace. netns.PodNet.Do keeps the promise node.PodNet asks for:
// a thread that cannot come back stays locked, and the error wraps
// netns.ErrNetnsNotRestored.
func (p podNet) Enter(fn func() error) error { return p.p.Do(fn) }

func (p podNet) Close() error { return p.p.Close() }

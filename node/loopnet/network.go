package loopnet

import (
	"net/netip"
	"sync"
)

// Network is the loopback network over one range: each pod gets an
// address of it, and there is nothing to enter.
type Network struct{ ipam *ipam }

// New is the loopback network over cidr, which must lie in 127.0.0.0/8
// (see CheckCIDR).
func New(cidr string) (*Network, error) {
	m, err := newIPAM(cidr)
	if err != nil {
		return nil, err
	}
	return &Network{ipam: m}, nil
}

// Add gives the pod keyed podKey (its UID) an address of the range until
// its Pod is closed; the error says when the range ran out.
func (n *Network) Add(podKey string) (*Pod, error) {
	ip, err := n.ipam.allocate(podKey)
	if err != nil {
		return nil, err
	}
	return &Pod{ipam: n.ipam, ip: ip}, nil
}

// Capacity is how many pods can have an address at once, and the range.
func (n *Network) Capacity() (int, netip.Prefix) { return n.ipam.size(), n.ipam.prefix }

// Pod is one pod's address on the loopback network.
type Pod struct {
	ipam *ipam
	ip   netip.Addr
	once sync.Once
}

// IP is the pod's address.
func (p *Pod) IP() netip.Addr { return p.ip }

// Enter is fn(): the pod's processes run in the host's network.
func (p *Pod) Enter(fn func() error) error { return fn() }

// Close frees the address once: a second release could free it from the
// pod it was handed to next.
func (p *Pod) Close() error {
	p.once.Do(func() { p.ipam.release(p.ip) })
	return nil
}

package netns

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Prefix lengths a pod CIDR may have: /30 leaves the node's address and
// one pod; shorter than /8 would only waste the allocator's scans.
const (
	minPrefixLen = 8
	maxPrefixLen = 30
)

// reserved are ranges a pod CIDR must not touch: the pods would shadow
// loopback (the workplace's and the API server's own rule), "this
// network", or multicast and the reserved block above it.
var reserved = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("0.0.0.0/8"), `"this network"`},
	{netip.MustParsePrefix("224.0.0.0/3"), "multicast and reserved"},
}

// ParseCIDR checks a pod CIDR as SetupCluster needs it: IPv4, written as
// its network address, between /8 and /30, and clear of loopback,
// 0.0.0.0/8 and 224.0.0.0/3. The errors name the value and what to give
// instead, for a flag's message.
func ParseCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("pod CIDR %q: want an IPv4 prefix like 10.244.0.0/16: %w", s, err)
	}
	if !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("pod CIDR %q: only IPv4 pod networks are built; give a prefix like 10.244.0.0/16", s)
	}
	if p.Bits() < minPrefixLen || p.Bits() > maxPrefixLen {
		return netip.Prefix{}, fmt.Errorf("pod CIDR %q: prefix length must be between /%d and /%d", s, minPrefixLen, maxPrefixLen)
	}
	if p.Masked() != p {
		return netip.Prefix{}, fmt.Errorf("pod CIDR %q has host bits set; did you mean %s?", s, p.Masked())
	}
	for _, r := range reserved {
		if p.Overlaps(r.prefix) {
			return netip.Prefix{}, fmt.Errorf("pod CIDR %q overlaps %s (%s)", s, r.prefix, r.what)
		}
	}
	return p, nil
}

// ipam hands out the addresses of a pod CIDR: the network address, the
// node's address (the first after it) and the broadcast address are never
// given. It is next-fit: each allocation takes the first free address
// after the previous one and wraps at the end, so a released address is
// given again only after all the others — an address that just left (and
// may still sit in an EndpointSlice or a neighbour cache) is not handed
// straight to a new pod. Given the same calls it gives the same answers.
// Not safe for concurrent use; Cluster locks around it.
type ipam struct {
	prefix      netip.Prefix
	first, last uint32 // pod addresses, both included
	next        uint32 // where the next search starts
	used        map[uint32]string
}

func newIPAM(p netip.Prefix) *ipam {
	network := toUint(p.Addr())
	size := uint32(1) << (32 - p.Bits())
	first := network + 2 // network+1 is the node's (the gateway's)
	return &ipam{prefix: p, first: first, last: network + size - 2, next: first, used: map[uint32]string{}}
}

// gateway is the node's address: the first of the prefix.
func (a *ipam) gateway() netip.Addr { return fromUint(toUint(a.prefix.Addr()) + 1) }

// capacity is how many pods the prefix holds.
func (a *ipam) capacity() int { return int(a.last - a.first + 1) }

// allocate gives owner the next free address.
func (a *ipam) allocate(owner string) (netip.Addr, error) {
	n := a.capacity()
	cand := a.next
	for range n {
		if _, taken := a.used[cand]; !taken {
			a.used[cand] = owner
			a.next = cand + 1
			if cand == a.last {
				a.next = a.first
			}
			return fromUint(cand), nil
		}
		if cand++; cand > a.last {
			cand = a.first
		}
	}
	return netip.Addr{}, fmt.Errorf("pod CIDR %s is exhausted: all %d pod addresses are in use", a.prefix, n)
}

// release frees ip; freeing an address that is not allocated does nothing.
func (a *ipam) release(ip netip.Addr) { delete(a.used, toUint(ip)) }

// owner is who holds ip ("" when free).
func (a *ipam) owner(ip netip.Addr) string { return a.used[toUint(ip)] }

func toUint(ip netip.Addr) uint32 {
	b := ip.As4()
	return binary.BigEndian.Uint32(b[:])
}

func fromUint(n uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], n)
	return netip.AddrFrom4(b)
}

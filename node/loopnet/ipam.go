package loopnet

import (
	"fmt"
	"net/netip"
	"sync"
)

// DefaultCIDR is where `podgate run` takes pod IPs from. Two agents side
// by side need different ranges.
const DefaultCIDR = "127.0.1.0/24"

// ipam hands out pod IPs from a loopback range, the way a CNI's host-local
// IPAM does: round robin, so a just-released address (which clients may
// still have connections to) is the last to be reused.
type ipam struct {
	prefix netip.Prefix
	first  netip.Addr // the range's first usable address
	last   netip.Addr

	mu    sync.Mutex
	next  netip.Addr
	inUse map[netip.Addr]string // → pod (its key)
}

// newIPAM parses cidr, which must lie in 127.0.0.0/8: pods bind their IP,
// and only loopback addresses are there without configuring interfaces.
func newIPAM(cidr string) (*ipam, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("--pod-cidr %q: %w", cidr, err)
	}
	p = p.Masked()
	if !p.Addr().Is4() || !netip.MustParsePrefix("127.0.0.0/8").Contains(p.Addr()) || p.Bits() < 8 {
		return nil, fmt.Errorf("--pod-cidr %q: must be an IPv4 range inside 127.0.0.0/8 (loopback), e.g. %s", cidr, DefaultCIDR)
	}
	if p.Bits() > 30 {
		return nil, fmt.Errorf("--pod-cidr %q: too small; use at most /30 (two pods), e.g. %s", cidr, DefaultCIDR)
	}
	first := p.Addr().Next() // skip the network address
	if first == netip.MustParseAddr("127.0.0.1") {
		// 127.0.0.1 is everybody's localhost: a pod there would collide
		// with every other program on the machine.
		first = first.Next()
	}
	last := lastAddr(p).Prev() // skip the broadcast address
	return &ipam{prefix: p, first: first, last: last, next: first, inUse: map[netip.Addr]string{}}, nil
}

func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v |= host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// size is how many pods the range has addresses for.
func (m *ipam) size() int {
	a, b := m.first.As4(), m.last.As4()
	v := func(x [4]byte) int { return int(x[0])<<24 | int(x[1])<<16 | int(x[2])<<8 | int(x[3]) }
	return v(b) - v(a) + 1
}

// CheckCIDR reports whether cidr can be a pod range (see New), for flag
// checks before anything is set up.
func CheckCIDR(cidr string) error {
	_, err := newIPAM(cidr)
	return err
}

// allocate returns the next free address for owner.
func (m *ipam) allocate(owner string) (netip.Addr, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.next
	for {
		if _, taken := m.inUse[a]; !taken {
			m.inUse[a] = owner
			m.next = m.advance(a)
			return a, nil
		}
		a = m.advance(a)
		if a == m.next {
			return netip.Addr{}, fmt.Errorf("no free pod IP left in %s (%d in use); give --pod-cidr a larger range", m.prefix, len(m.inUse))
		}
	}
}

func (m *ipam) advance(a netip.Addr) netip.Addr {
	if a == m.last {
		return m.first
	}
	return a.Next()
}

// release frees a.
func (m *ipam) release(a netip.Addr) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.inUse, a)
}

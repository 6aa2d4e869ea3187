package netns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/vishvananda/netlink"
)

const (
	// BridgeName is the bridge in the cluster namespace that holds the
	// node's address and every pod's host-side veth.
	BridgeName = "podgate0"
	// PodInterface is the pod's end of its veth pair, in its namespace.
	PodInterface = "eth0"
	// vethPrefix starts the name of every host-side veth: "pgv" and the
	// pod IP in hex ("pgv0af40002" for 10.244.0.2), unique while the
	// address is allocated and readable in `ip link`.
	vethPrefix = "pgv"
)

// Cluster is the pod network of one node, in the cluster namespace: the
// bridge with the node's address and the allocator of pod IPs. Safe for
// concurrent use.
type Cluster struct {
	cidr    netip.Prefix
	gateway netip.Addr
	bridge  int // the bridge's interface index

	mu     sync.Mutex
	ipam   *ipam
	pods   map[string]*PodNet
	closed bool
}

// SetupCluster turns the calling process's network namespace into the
// cluster namespace for pod CIDR cidr (see ParseCIDR): lo up, the bridge
// podgate0 up with the first address of cidr (the node's, every pod's
// gateway). It must run in a namespace podgate created (the child of
// StartInNewNetns): before changing anything it refuses the host's
// namespace (that of the outermost ancestor process whose namespace it can
// read) and any namespace with an interface up or addressed that it did
// not make. One Cluster per namespace.
func SetupCluster(cidr string) (*Cluster, error) {
	prefix, err := ParseCIDR(cidr)
	if err != nil {
		return nil, err
	}
	if err := checkOwnNetns(); err != nil {
		return nil, err
	}
	a := newIPAM(prefix)
	c := &Cluster{cidr: prefix, gateway: a.gateway(), ipam: a, pods: map[string]*PodNet{}}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return nil, fmt.Errorf("set up the cluster network: %w", err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return nil, fmt.Errorf("set up the cluster network: lo up: %w", err)
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name = BridgeName
	// A bridge whose MAC address was never set takes the lowest MAC of its
	// ports and changes it as veths come and go, which leaves stale
	// gateway entries in the pods' neighbour caches; an address set once
	// stays.
	attrs.HardwareAddr = macFor(0x47, c.gateway) // 'G'ateway
	br := &netlink.Bridge{LinkAttrs: attrs}
	if err := netlink.LinkAdd(br); err != nil {
		return nil, fmt.Errorf("set up the cluster network: add bridge %s: %w", BridgeName, err)
	}
	if err := configureBridge(br, c.gateway, prefix); err != nil {
		_ = netlink.LinkDel(br)
		return nil, err
	}
	c.bridge = br.Attrs().Index
	return c, nil
}

func configureBridge(br netlink.Link, gw netip.Addr, prefix netip.Prefix) error {
	addr := &netlink.Addr{IPNet: ipNet(gw, prefix.Bits())}
	if err := netlink.AddrAdd(br, addr); err != nil {
		return fmt.Errorf("set up the cluster network: address %s on %s: %w", addr.IPNet, BridgeName, err)
	}
	if err := netlink.LinkSetUp(br); err != nil {
		return fmt.Errorf("set up the cluster network: %s up: %w", BridgeName, err)
	}
	return nil
}

// checkOwnNetns refuses a namespace that is not plainly podgate's: the
// host's — the one of the outermost ancestor process whose namespace can
// be read (PID 1's often cannot, even by root) — or one with an interface
// up or addressed besides lo and what SetupCluster makes. A fresh
// namespace has only lo (and, when their modules are loaded, fallback
// tunnel devices, down and without addresses).
func checkOwnNetns() error {
	self, err := netnsInode(os.Getpid())
	if err != nil {
		return fmt.Errorf("check the network namespace: %w", err)
	}
	host, hostPid, found := outermostNetns(os.Getpid())
	switch {
	case !found:
		return errors.New("refusing to configure this network namespace: no ancestor process's namespace can be read to tell it from the host's")
	case host == self:
		return fmt.Errorf("refusing to configure the host's network namespace (the one of process %d): set up the cluster network in a namespace of its own (StartInNewNetns)", hostPid)
	}
	links, err := netlink.LinkList()
	if err != nil {
		return fmt.Errorf("check the network namespace: list links: %w", err)
	}
	for _, l := range links {
		name := l.Attrs().Name
		if name == "lo" || name == BridgeName || strings.HasPrefix(name, vethPrefix) {
			continue
		}
		addrs, err := netlink.AddrList(l, syscall.AF_UNSPEC)
		if err != nil {
			return fmt.Errorf("check the network namespace: addresses of %s: %w", name, err)
		}
		if l.Attrs().Flags&net.FlagUp != 0 || len(addrs) > 0 {
			return fmt.Errorf("refusing to configure a network namespace podgate did not create: it has interface %s up or addressed", name)
		}
	}
	return nil
}

// outermostNetns walks up the ancestors of pid and returns the network
// namespace of the outermost one whose namespace can be read.
func outermostNetns(pid int) (ino uint64, at int, found bool) {
	for range 4096 { // a bound, in case of a cycle while pids are reused
		ppid, err := parentOf(pid)
		if err != nil || ppid <= 0 {
			return ino, at, found
		}
		if n, err := netnsInode(ppid); err == nil {
			ino, at, found = n, ppid, true
		}
		pid = ppid
	}
	return ino, at, found
}

// parentOf reads the parent pid from /proc/PID/stat (readable for every
// process, unlike its namespaces).
func parentOf(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if i < 0 || len(f) < 2 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	return strconv.Atoi(f[1])
}

func netnsInode(pid int) (uint64, error) {
	ns, err := NetnsOf(pid)
	if err != nil {
		return 0, err
	}
	defer func() { _ = ns.Close() }()
	return ns.Inode(), nil
}

// CIDR is the pod CIDR.
func (c *Cluster) CIDR() netip.Prefix { return c.cidr }

// Gateway is the node's address on the bridge, the first of the CIDR:
// pods reach the node there, and it is the node's InternalIP.
func (c *Cluster) Gateway() netip.Addr { return c.gateway }

// Capacity is how many pods the CIDR has addresses for (all but the
// network, broadcast and node's addresses).
func (c *Cluster) Capacity() int { return c.ipam.capacity() }

// AddPod gives the pod key (its UID, say) a network: a new namespace with
// lo up and eth0 carrying the next free pod IP, a default route via the
// gateway, and the veth's other end on the bridge. A key that already has
// a network is refused. On failure nothing is left.
func (c *Cluster) AddPod(key string) (*PodNet, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("pod network for %q: the cluster network is closed", key)
	}
	if _, dup := c.pods[key]; dup {
		return nil, fmt.Errorf("pod network for %q: it already has one", key)
	}
	ip, err := c.ipam.allocate(key)
	if err != nil {
		return nil, fmt.Errorf("pod network for %q: %w", key, err)
	}
	p, err := c.plumb(key, ip)
	if err != nil {
		c.ipam.release(ip)
		return nil, fmt.Errorf("pod network for %q: %w", key, err)
	}
	c.pods[key] = p
	return p, nil
}

// plumb creates the namespace and the veth pair for ip.
func (c *Cluster) plumb(key string, ip netip.Addr) (*PodNet, error) {
	ns, err := newNetns()
	if err != nil {
		return nil, err
	}
	p := &PodNet{c: c, key: key, ip: ip, ns: ns, hostVeth: vethName(ip)}
	attrs := netlink.NewLinkAttrs()
	attrs.Name = p.hostVeth
	attrs.MasterIndex = c.bridge
	veth := &netlink.Veth{
		LinkAttrs: attrs,
		PeerName:  PodInterface,
		// Derived from the IP: a reused address comes back with the same
		// MAC, so the node's neighbour entry for it stays right.
		PeerHardwareAddr: macFor(0x50, ip), // 'P'od
	}
	err = ns.withFd(func(fd int) error {
		// Created straight inside the pod's namespace: no interface named
		// eth0 ever appears in the cluster namespace.
		veth.PeerNamespace = netlink.NsFd(fd)
		return netlink.LinkAdd(veth)
	})
	if err != nil {
		_ = ns.Close()
		return nil, fmt.Errorf("add veth %s: %w", p.hostVeth, err)
	}
	err = netlink.LinkSetUp(veth)
	if err == nil {
		err = ns.Do(func() error { return configurePod(ip, c.cidr.Bits(), c.gateway) })
	}
	if err != nil {
		_ = netlink.LinkDel(veth) // takes eth0 with it
		_ = ns.Close()
		return nil, err
	}
	return p, nil
}

// configurePod runs inside the pod's namespace.
func configurePod(ip netip.Addr, bits int, gw netip.Addr) error {
	lo, err := netlink.LinkByName("lo")
	if err == nil {
		err = netlink.LinkSetUp(lo)
	}
	if err != nil {
		return fmt.Errorf("lo up in the pod: %w", err)
	}
	eth, err := netlink.LinkByName(PodInterface)
	if err != nil {
		return fmt.Errorf("find %s in the pod: %w", PodInterface, err)
	}
	if err := netlink.AddrAdd(eth, &netlink.Addr{IPNet: ipNet(ip, bits)}); err != nil {
		return fmt.Errorf("address %s/%d on %s: %w", ip, bits, PodInterface, err)
	}
	if err := netlink.LinkSetUp(eth); err != nil {
		return fmt.Errorf("%s up: %w", PodInterface, err)
	}
	route := &netlink.Route{LinkIndex: eth.Attrs().Index, Gw: gw.AsSlice()}
	if err := netlink.RouteAdd(route); err != nil {
		return fmt.Errorf("default route via %s: %w", gw, err)
	}
	return nil
}

// Close removes every pod's network and the bridge. The namespace itself
// goes with the process.
func (c *Cluster) Close() error {
	c.mu.Lock()
	c.closed = true
	pods := make([]*PodNet, 0, len(c.pods))
	for _, p := range c.pods {
		pods = append(pods, p)
	}
	c.mu.Unlock()
	var errs []error
	for _, p := range pods {
		errs = append(errs, p.Close())
	}
	if br, err := netlink.LinkByIndex(c.bridge); err == nil {
		if err := netlink.LinkDel(br); err != nil {
			errs = append(errs, fmt.Errorf("delete bridge %s: %w", BridgeName, err))
		}
	}
	return errors.Join(errs...)
}

// PodNet is one pod's network: its namespace, address and veth.
type PodNet struct {
	c        *Cluster
	key      string
	ip       netip.Addr
	ns       *Netns
	hostVeth string
	closed   bool // under c.mu
}

// Key is the key AddPod was given.
func (p *PodNet) Key() string { return p.key }

// IP is the pod's address (status.podIP).
func (p *PodNet) IP() netip.Addr { return p.ip }

// Netns is the pod's namespace (Inode, Listen, Do, Start).
func (p *PodNet) Netns() *Netns { return p.ns }

// HostVeth names the veth end on the bridge, in the cluster namespace.
func (p *PodNet) HostVeth() string { return p.hostVeth }

// Do runs fn on a thread inside the pod's namespace (see Netns.Do).
func (p *PodNet) Do(fn func() error) error { return p.ns.Do(fn) }

// Start starts cmd inside the pod's namespace (see Netns.Start).
func (p *PodNet) Start(cmd *exec.Cmd) error { return p.ns.Start(cmd) }

// Close deletes the veth pair (eth0 goes with it), frees the address and
// closes the namespace's descriptor; the namespace itself goes when its
// last process exits. Call it once the pod's processes are gone: a
// process still inside keeps only lo. Closing twice does nothing.
func (p *PodNet) Close() error {
	c := p.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	var errs []error
	gone := true
	if l, err := netlink.LinkByName(p.hostVeth); err == nil {
		if err := netlink.LinkDel(l); err != nil {
			gone = false
			errs = append(errs, fmt.Errorf("delete veth %s: %w", p.hostVeth, err))
		}
	} else if !errors.As(err, new(netlink.LinkNotFoundError)) {
		gone = false
		errs = append(errs, fmt.Errorf("find veth %s: %w", p.hostVeth, err))
	}
	if gone {
		// An address still on an eth0 is never handed out again.
		c.ipam.release(p.ip)
	}
	delete(c.pods, p.key)
	errs = append(errs, p.ns.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close pod network for %q: %w", p.key, err)
	}
	return nil
}

func vethName(ip netip.Addr) string { return fmt.Sprintf("%s%08x", vethPrefix, toUint(ip)) }

// macFor is a locally administered unicast MAC: 02, kind, then the four
// bytes of ip.
func macFor(kind byte, ip netip.Addr) net.HardwareAddr {
	b := ip.As4()
	return net.HardwareAddr{0x02, kind, b[0], b[1], b[2], b[3]}
}

func ipNet(ip netip.Addr, bits int) *net.IPNet {
	return &net.IPNet{IP: ip.AsSlice(), Mask: net.CIDRMask(bits, 32)}
}

// RouteServices makes the cluster's namespace route Services as a node
// with kube-proxy does: IPv4 forwarding on (a pod's packet to a ClusterIP
// arrives at the gateway, kube-proxy's rules rewrite it to a pod's
// address, and it must be forwarded back out the bridge), and the Service
// range routed on the bridge, so that connections opened in the namespace
// itself (hostNetwork pods, the host's forwards) find a route before
// kube-proxy's rules rewrite them. Both belong to this namespace alone.
func (c *Cluster) RouteServices(serviceCIDR string) error {
	svc, err := netip.ParsePrefix(serviceCIDR)
	if err != nil {
		return fmt.Errorf("route Services: %w", err)
	}
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1\n"), 0o644); err != nil {
		return fmt.Errorf("route Services: IPv4 forwarding: %w", err)
	}
	br, err := netlink.LinkByIndex(c.bridge)
	if err != nil {
		return fmt.Errorf("route Services: %w", err)
	}
	route := &netlink.Route{LinkIndex: br.Attrs().Index, Dst: ipNet(svc.Addr(), svc.Bits()), Src: c.gateway.AsSlice(), Scope: netlink.SCOPE_LINK}
	if err := netlink.RouteAdd(route); err != nil {
		return fmt.Errorf("route Services: %s on %s: %w", svc, BridgeName, err)
	}
	return nil
}

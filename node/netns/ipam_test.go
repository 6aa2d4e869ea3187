package netns

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseCIDR(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"10.244.0.0/16", ""},
		{"192.168.50.0/30", ""},
		{"10.0.0.0/8", ""},
		{"127.0.0.0/8", `overlaps 127.0.0.0/8 (loopback)`},
		{"127.128.0.0/9", `overlaps 127.0.0.0/8 (loopback)`},
		{"127.1.0.0/16", `overlaps 127.0.0.0/8 (loopback)`},
		{"0.0.0.0/8", `overlaps 0.0.0.0/8`},
		{"224.0.0.0/8", `overlaps 224.0.0.0/3 (multicast and reserved)`},
		{"10.244.0.5/16", `host bits set; did you mean 10.244.0.0/16?`},
		{"10.0.0.0/31", `prefix length must be between /8 and /30`},
		{"10.0.0.0/7", `prefix length must be between /8 and /30`},
		{"0.0.0.0/0", `prefix length must be between /8 and /30`},
		{"fd00::/64", `only IPv4 pod networks are built`},
		{"10.244.0.0", `want an IPv4 prefix like 10.244.0.0/16`},
		{"", `want an IPv4 prefix`},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			p, err := ParseCIDR(tc.in)
			if tc.want == "" {
				if err != nil || p.String() != tc.in {
					t.Fatalf("ParseCIDR(%q) = %v, %v", tc.in, p, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"`+tc.in+`"`) {
				t.Fatalf("ParseCIDR(%q) = %v, want an error naming the value and %q", tc.in, err, tc.want)
			}
		})
	}
}

// op is one IPAM call: allocate for owner, or release addr.
type op struct {
	allocate string
	release  string
	want     string // the address allocated, or an error's text
}

func TestIPAM(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, cidr string
		ops        []op
	}{
		{"the gateway and the network and broadcast addresses are never given", "10.1.0.0/29", []op{
			{allocate: "a", want: "10.1.0.2"}, {allocate: "b", want: "10.1.0.3"}, {allocate: "c", want: "10.1.0.4"},
			{allocate: "d", want: "10.1.0.5"}, {allocate: "e", want: "10.1.0.6"},
			{allocate: "f", want: "pod CIDR 10.1.0.0/29 is exhausted: all 5 pod addresses are in use"},
		}},
		{"a released address comes back only after the others", "10.1.0.0/29", []op{
			{allocate: "a", want: "10.1.0.2"}, {allocate: "b", want: "10.1.0.3"},
			{release: "10.1.0.2"},
			{allocate: "c", want: "10.1.0.4"}, {allocate: "d", want: "10.1.0.5"}, {allocate: "e", want: "10.1.0.6"},
			{allocate: "f", want: "10.1.0.2"}, // wrapped
			{allocate: "g", want: "pod CIDR 10.1.0.0/29 is exhausted"},
			{release: "10.1.0.5"},
			{allocate: "h", want: "10.1.0.5"},
		}},
		{"a /30 holds one pod", "10.2.0.0/30", []op{
			{allocate: "a", want: "10.2.0.2"},
			{allocate: "b", want: "all 1 pod addresses are in use"},
			{release: "10.2.0.2"},
			{allocate: "c", want: "10.2.0.2"},
		}},
		{"releasing a free address changes nothing", "10.3.0.0/29", []op{
			{release: "10.3.0.4"},
			{allocate: "a", want: "10.3.0.2"}, {allocate: "b", want: "10.3.0.3"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Twice, on two allocators: the same calls give the same answers.
			for range 2 {
				a := newIPAM(netip.MustParsePrefix(tc.cidr))
				for i, o := range tc.ops {
					if o.release != "" {
						a.release(netip.MustParseAddr(o.release))
						continue
					}
					ip, err := a.allocate(o.allocate)
					got := ip.String()
					if err != nil {
						got = err.Error()
					}
					if !strings.Contains(got, o.want) {
						t.Fatalf("op %d allocate(%s) = %s, want %s", i, o.allocate, got, o.want)
					}
					if err == nil && a.owner(ip) != o.allocate {
						t.Fatalf("op %d: owner of %s = %q", i, ip, a.owner(ip))
					}
				}
			}
		})
	}
}

func TestNamesAndAddressesFollowThePodIP(t *testing.T) {
	t.Parallel()
	cases := []struct{ ip, veth, mac, gw string }{
		{"10.244.0.2", "pgv0af40002", "02:50:0a:f4:00:02", "10.244.0.1"},
		{"10.244.255.254", "pgv0af4fffe", "02:50:0a:f4:ff:fe", "10.244.0.1"},
		{"192.168.7.9", "pgvc0a80709", "02:50:c0:a8:07:09", "192.168.0.1"},
	}
	for _, tc := range cases {
		ip := netip.MustParseAddr(tc.ip)
		if got := vethName(ip); got != tc.veth || len(got) > 15 {
			t.Errorf("vethName(%s) = %q, want %q (at most 15 bytes, the kernel's IFNAMSIZ-1)", ip, got, tc.veth)
		}
		if got := macFor(0x50, ip).String(); got != tc.mac {
			t.Errorf("pod MAC of %s = %s, want %s", ip, got, tc.mac)
		}
		if got := newIPAM(netip.PrefixFrom(ip, 16).Masked()).gateway().String(); got != tc.gw {
			t.Errorf("gateway of %s/16 = %s, want %s", ip, got, tc.gw)
		}
	}
}

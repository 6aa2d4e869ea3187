package loopnet

import (
	"net"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestSocketInodesOnlyCountSocketsInTheWay(t *testing.T) {
	// A real listener on one loopback address: it blocks that address and
	// port, not the same port on another loopback address.
	ln, err := net.Listen("tcp4", "127.0.93.5:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if got := socketInodes(netip.MustParseAddr("127.0.93.5"), port, corev1.ProtocolTCP); len(got) != 1 {
		t.Errorf("sockets in the way of 127.0.93.5:%d = %v, want the listener's", port, got)
	}
	if got := socketInodes(netip.MustParseAddr("127.0.93.6"), port, corev1.ProtocolTCP); len(got) != 0 {
		t.Errorf("sockets in the way of 127.0.93.6:%d = %v, want none", port, got)
	}
}

func TestBlocksMatchesProcAddresses(t *testing.T) {
	ip := netip.MustParseAddr("127.0.93.5")
	for _, tc := range []struct {
		name string
		hex  string
		want bool
	}{
		{"the same IPv4 address", procHex(ip.AsSlice()), true},
		{"the IPv4 wildcard", "00000000", true},
		{"the IPv6 wildcard", "00000000000000000000000000000000", true},
		{"the same address IPv4-mapped in tcp6", procHex(netip.AddrFrom16(ip.As16()).AsSlice()), true},
		{"another loopback address", procHex(netip.MustParseAddr("127.0.0.1").AsSlice()), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := blocks(tc.hex, ip); got != tc.want {
				t.Fatalf("blocks(%q, %s) = %v, want %v", tc.hex, ip, got, tc.want)
			}
		})
	}
}

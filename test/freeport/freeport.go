// Package freeport hands tests a TCP port for a child process to bind
// later, outside the kernel's ephemeral range.
//
// Why not port 0's answer: a port the kernel picked for a listener that is
// then closed comes from the ephemeral range (ip_local_port_range), the
// same range every outgoing connection on the machine takes its source
// port from. Between the close and the child's bind, any connection of a
// test running in parallel may take it, and the child fails with "address
// already in use" (seen in CI). Ports below that range are never handed
// out by the kernel, so only another test that picks the same random port
// in the same instant can collide.
package freeport

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// lowest is the bottom of the range Port picks from: above the ports
// well-known services (and podgate run's 8080, 8012, 9700…) use.
const lowest = 10000

// Port returns a TCP port free on ip (127.0.0.1 when empty) right now,
// from below the ephemeral range.
func Port(t testing.TB, ip string) int {
	t.Helper()
	return pick(t, ip, freeTCP)
}

// TCPAndUDP is Port for a server that binds both (a DNS server).
func TCPAndUDP(t testing.TB, ip string) int {
	t.Helper()
	return pick(t, ip, func(addr string) bool { return freeTCP(addr) && freeUDP(addr) })
}

func pick(t testing.TB, ip string, free func(addr string) bool) int {
	t.Helper()
	if ip == "" {
		ip = "127.0.0.1"
	}
	top := ephemeralLow()
	for range 1000 {
		p := lowest + rand.IntN(top-lowest)
		if free(net.JoinHostPort(ip, strconv.Itoa(p))) {
			return p
		}
	}
	t.Fatalf("no free port on %s between %d and %d after 1000 tries", ip, lowest, top)
	return 0
}

func freeTCP(addr string) bool {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}

func freeUDP(addr string) bool {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	_ = pc.Close()
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default 32768 when the file cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= lowest+1000 {
		return 32768
	}
	return n
}

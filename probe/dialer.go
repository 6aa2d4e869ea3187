//go:build !windows

package probe

import (
	"net"
	"syscall"
)

// probeDialer dials with SO_LINGER {on, 1s}, as the kubelet does for every
// probe socket: a probe opens a socket per attempt, and lingering at most
// one second keeps a busy node from piling up closing sockets while still
// ending with a FIN rather than the RST a zero linger would send.
//
// Unlike the kubelet's dialer, TCP keep-alive is off: a probe connection
// lives for one request, and keep-alive would only start after 15 s idle,
// yet setting it up costs four setsockopt calls per probe.
func probeDialer() *net.Dialer {
	return &net.Dialer{Control: setLinger, KeepAlive: -1}
}

func setLinger(_, _ string, c syscall.RawConn) error {
	return c.Control(func(fd uintptr) {
		// Best effort, like the kubelet: a socket without the option still
		// probes correctly.
		_ = syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER,
			&syscall.Linger{Onoff: 1, Linger: 1})
	})
}

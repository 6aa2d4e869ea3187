package probe

import (
	"context"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// tcpProbe opens a connection and closes it at once: the container passes
// if something accepts. The failure message is the dial error's text
// ("dial tcp 10.0.0.1:80: connect: connection refused", "... i/o timeout").
func (r *Runner) tcpProbe(ctx context.Context, s *corev1.TCPSocketAction, t Target, timeout time.Duration) (Result, string, error) {
	port, err := resolvePort(s.Port, t.Ports)
	if err != nil {
		return Error, "", err
	}
	host := s.Host
	if host == "" {
		host = t.PodIP
	}
	// A copy of the shared dialer keeps its linger control and adds this
	// probe's timeout; net.Dialer's timeout reports "i/o timeout" as the
	// kubelet's does.
	d := *r.dialer
	d.Timeout = timeout
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return Failure, err.Error(), nil
	}
	_ = conn.Close() // a close error says nothing about the container
	return Success, "", nil
}

package probe

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"syscall"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func tcpProbeOf(port intstr.IntOrString, host string) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:   corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: port, Host: host}},
		TimeoutSeconds: testTimeout,
	}
}

func TestTCPSocket(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	accepted := make(chan struct{}, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
			accepted <- struct{}{}
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	closed := freePort(t)
	ports := []corev1.ContainerPort{{Name: "tcp", ContainerPort: int32(port)}}

	tests := []struct {
		name    string
		probe   *corev1.Probe
		podIP   string
		want    Result
		wantMsg string
	}{
		{"an open port succeeds", tcpProbeOf(intstr.FromInt32(int32(port)), ""), "127.0.0.1", Success, ""},
		{"tcpSocket.host overrides the pod IP", tcpProbeOf(intstr.FromInt32(int32(port)), "127.0.0.1"), "127.0.0.2", Success, ""},
		{"a named port resolves against the container's ports", tcpProbeOf(intstr.FromString("tcp"), ""), "127.0.0.1", Success, ""},
		{"a refused port fails with the dial error", tcpProbeOf(intstr.FromInt32(int32(closed)), ""), "127.0.0.1", Failure,
			fmt.Sprintf("dial tcp 127.0.0.1:%d: connect: connection refused", closed)},
		{"an unknown port name is an error", tcpProbeOf(intstr.FromString("grpc"), ""), "127.0.0.1", Error,
			`strconv.Atoi: parsing "grpc": invalid syntax`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := run(t, tc.probe, Target{PodIP: tc.podIP, Ports: ports})
			if o.Result != tc.want || o.Message != tc.wantMsg {
				t.Errorf("got %v %q, want %v %q", o.Result, o.Message, tc.want, tc.wantMsg)
			}
			if tc.want == Success {
				<-accepted // the connection really reached the listener
			}
		})
	}

	t.Run("an IPv6 pod IP is bracketed", func(t *testing.T) {
		s := newIPv6Server(t, &recorder{})
		_, p6 := hostPort(t, s.URL)
		if o := run(t, tcpProbeOf(intstr.FromInt32(int32(p6)), ""), Target{PodIP: "::1"}); o.Result != Success {
			t.Errorf("got %v %q, want success", o.Result, o.Message)
		}
	})
}

func TestProbeSocketsLingerOneSecond(t *testing.T) {
	s := httptest.NewServer(&recorder{})
	defer s.Close()
	conn, err := runner.dialer.DialContext(context.Background(), "tcp", s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var l syscall.Linger
	var sockErr error
	err = raw.Control(func(fd uintptr) {
		size := uint32(unsafe.Sizeof(l))
		_, _, errno := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.SOL_SOCKET, syscall.SO_LINGER,
			uintptr(unsafe.Pointer(&l)), uintptr(unsafe.Pointer(&size)), 0)
		if errno != 0 {
			sockErr = errno
		}
	})
	if err != nil || sockErr != nil {
		t.Fatalf("getsockopt: %v %v", err, sockErr)
	}
	if l.Onoff != 1 || l.Linger != 1 {
		t.Errorf("SO_LINGER = %+v, want {Onoff:1 Linger:1}", l)
	}
}

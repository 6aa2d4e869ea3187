package probe

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/podgate/podgate/test/freeport"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// runner is shared by tests, as one Runner serves every worker.
var runner = NewRunner()

func run(t *testing.T, p *corev1.Probe, tg Target) Outcome {
	t.Helper()
	return runner.Run(context.Background(), p, tg)
}

// testTimeout is the timeoutSeconds of test probes that should pass: long
// enough that a loaded machine never turns a pass into a timeout. Tests of
// the timeout itself set 1s.
const testTimeout = 10

func httpGetProbe(port intstr.IntOrString, path string) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: port, Path: path}},
		TimeoutSeconds: testTimeout,
	}
}

func withTimeout(p *corev1.Probe, seconds int32) *corev1.Probe {
	p.TimeoutSeconds = seconds
	return p
}

// hostPort splits a test server's URL into host and numeric port.
func hostPort(t *testing.T, rawURL string) (string, int) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return u.Hostname(), p
}

// freePort returns a loopback port nothing listens on (it was just closed).
func freePort(t *testing.T) int { return freeport.Port(t, "") }

// newIPv6Server serves h on [::1], or skips when this machine has no IPv6
// loopback.
func newIPv6Server(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback on this machine: %v", err)
	}
	s := httptest.NewUnstartedServer(h)
	_ = s.Listener.Close()
	s.Listener = l
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// rawServer answers every request with an empty 200 and records the request
// head exactly as it came off the wire, so header order and duplicates can
// be checked (net/http's server would fold them into a map).
type rawServer struct {
	l     net.Listener
	heads chan []string
	wg    sync.WaitGroup
}

func newRawServer(t *testing.T) *rawServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{l: l, heads: make(chan []string, 64)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.serve(c)
		}
	}()
	t.Cleanup(func() { _ = l.Close(); s.wg.Wait() })
	return s
}

func (s *rawServer) serve(c net.Conn) {
	defer func() { _ = c.Close() }()
	br := bufio.NewReader(c)
	var head []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		head = append(head, line)
	}
	s.heads <- head
	_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
}

func (s *rawServer) port() int { return s.l.Addr().(*net.TCPAddr).Port }

// headerValues lists, in wire order, the values of header name in head.
func headerValues(head []string, name string) []string {
	var vals []string
	for _, line := range head[1:] {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.EqualFold(k, name) {
			vals = append(vals, strings.TrimSpace(v))
		}
	}
	return vals
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

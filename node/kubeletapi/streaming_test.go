package kubeletapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/podgate/podgate/test/syncbuf"
)

// scriptedPods runs "commands" of its own: "echo" copies stdin to
// stdout, "fail N" writes to stderr and exits N, "size" prints the first
// terminal size, "refuse" is the agent refusing; DialPort reaches echo.
type scriptedPods struct {
	fakePods
	echo   string // host:port of an echo server (port 8080)
	banner string // host:port of a server that writes a line and closes (port 9090)
}

func (p scriptedPods) Exec(ctx context.Context, _, _, _ string, cmd []string, s ExecIO) (int, error) {
	switch cmd[0] {
	case "echo":
		_, err := io.Copy(s.Stdout, s.Stdin)
		return 0, err
	case "fail":
		fmt.Fprintln(s.Stderr, "failing")
		return strconv.Atoi(cmd[1])
	case "size":
		select {
		case sz := <-s.Resize:
			fmt.Fprintf(s.Stdout, "%dx%d tty=%v", sz.Width, sz.Height, s.TTY)
		case <-ctx.Done():
		}
		return 0, nil
	}
	return -1, apierrors.NewBadRequest("container c of pod p is not running")
}

func (p scriptedPods) DialPort(ctx context.Context, _, _ string, port uint16) (net.Conn, error) {
	var d net.Dialer
	switch port {
	case 8080:
		return d.DialContext(ctx, "tcp", p.echo)
	case 9090:
		return d.DialContext(ctx, "tcp", p.banner)
	}
	return nil, errors.New("connection refused")
}

// oneSize is a TerminalSizeQueue with one size.
type oneSize struct{ sent bool }

func (q *oneSize) Next() *remotecommand.TerminalSize {
	if q.sent {
		return nil
	}
	q.sent = true
	return &remotecommand.TerminalSize{Width: 132, Height: 43}
}

// TestExecSpeaksRemotecommandOverSPDY drives the server with client-go's
// SPDY executor, with the query the API server sends (input, output,
// error, tty as 1, command repeated).
func TestExecSpeaksRemotecommandOverSPDY(t *testing.T) {
	t.Parallel()
	srv, _, sign, ca, _ := startTestServer(t, &allowOnly{user: "apiserver"}, scriptedPods{})
	client := sign("apiserver", ca, false)
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CertData: client.CertPEM, KeyData: client.KeyPEM, CAData: ca.CertPEM}}
	for _, tc := range []struct {
		name, query      string
		stdin            string
		tty              bool
		wantOut, wantErr string
		wantCode         int    // an exit code kubectl would exit with
		wantFail         string // an error that is not an exit code
	}{
		{name: "stdin reaches the command, its stdout comes back", query: "command=echo&input=1&output=1", stdin: "hello\n", wantOut: "hello\n"},
		{name: "a non-zero exit is the code on the error stream", query: "command=fail&command=3&output=1&error=1", wantErr: "failing\n", wantCode: 3},
		{name: "a terminal's size arrives on the resize stream", query: "command=size&output=1&tty=1", tty: true, wantOut: "132x43 tty=true"},
		{name: "the agent's refusal is the error's message", query: "command=nothing&output=1", wantFail: "container c of pod p is not running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, _ := url.Parse(srv.URL + "/exec/default/p/c?" + tc.query)
			ex, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
			if err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			opts := remotecommand.StreamOptions{Stdout: &out, Tty: tc.tty}
			if strings.Contains(tc.query, "input=1") {
				opts.Stdin = strings.NewReader(tc.stdin)
			}
			if strings.Contains(tc.query, "error=1") {
				opts.Stderr = &errb
			}
			if tc.tty {
				opts.TerminalSizeQueue = &oneSize{}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err = ex.StreamWithContext(ctx, opts)
			var code utilexec.CodeExitError
			switch {
			case tc.wantFail != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantFail) {
					t.Errorf("error %v, want one with %q", err, tc.wantFail)
				}
			case tc.wantCode != 0:
				if !errors.As(err, &code) || code.Code != tc.wantCode {
					t.Errorf("error %v, want exit code %d", err, tc.wantCode)
				}
			case err != nil:
				t.Errorf("error %v", err)
			}
			if out.String() != tc.wantOut || errb.String() != tc.wantErr {
				t.Errorf("stdout %q, stderr %q; want %q, %q", out.String(), errb.String(), tc.wantOut, tc.wantErr)
			}
		})
	}
}

// serve accepts connections on a loopback port until the test ends,
// handing each to handle.
func serve(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); handle(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

func TestPortForwardConnectsEachStreamPairToThePort(t *testing.T) {
	t.Parallel()
	echo := serve(t, func(c net.Conn) { _, _ = io.Copy(c, c) })
	banner := serve(t, func(c net.Conn) { _, _ = io.WriteString(c, "banner\n") })
	srv, _, sign, ca, _ := startTestServer(t, &allowOnly{user: "apiserver"}, scriptedPods{echo: echo, banner: banner})
	client := sign("apiserver", ca, false)
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CertData: client.CertPEM, KeyData: client.KeyPEM, CAData: ca.CertPEM}}
	rt, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.URL + "/portForward/default/p")
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, "POST", u)
	stop, ready := make(chan struct{}), make(chan struct{})
	// Written by the forwarder's goroutines.
	var out, errOut syncbuf.Buffer
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:8080", "0:9090"}, stop, ready, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	defer func() { close(stop); <-done }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("port-forward ended: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("port-forward not ready within 20s")
	}
	ports, err := fw.GetPorts()
	if err != nil {
		t.Fatal(err)
	}
	local := map[uint16]string{}
	for _, p := range ports {
		local[p.Remote] = net.JoinHostPort("127.0.0.1", strconv.Itoa(int(p.Local)))
	}
	for i := range 2 { // each connection is a stream pair of its own
		c, err := net.DialTimeout("tcp", local[8080], 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		msg := fmt.Sprintf("ping %d\n", i)
		if _, err := io.WriteString(c, msg); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != msg {
			t.Errorf("connection %d: echoed %q, %v; want %q", i, got, err, msg)
		}
		c.Close()
	}
	t.Run("a program that closes first closes the client's connection", func(t *testing.T) {
		c, err := net.DialTimeout("tcp", local[9090], 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		got, err := io.ReadAll(c)
		if err != nil || string(got) != "banner\n" {
			t.Errorf("read %q, %v; want the banner and the end of the connection", got, err)
		}
	})
}

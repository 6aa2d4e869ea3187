//go:build linux

package netns

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podgate/podgate/test/syncbuf"
)

func TestHostLoopbackReachesAPodThroughAPassedListener(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	cmd := childCmd("forward", cidrEnv+"=10.250.0.0/16")
	f, err := PassListener(cmd, "door", ln)
	if err != nil {
		t.Fatal(err)
	}
	c := startLive(t, cmd, true)
	// Only the child holds the socket from here on.
	_ = f.Close()
	_ = ln.Close()
	if l := c.line(t); l != "ready" {
		t.Fatalf("child: %q, want ready", l)
	}
	body, err := get("http://" + addr + "/")
	if want := "a from 10.250.0.1"; err != nil || body != want {
		t.Fatalf("GET %s on the host's loopback: %q, %v; want %q", addr, body, err, want)
	}
	c.finish(t)
	// The port went with the child.
	if conn, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
		_ = conn.Close()
		t.Errorf("%s still accepts after the child exited", addr)
	}
}

// forwardChild serves pod a behind the inherited listener "door" until
// its stdin ends.
func forwardChild() error {
	lns, err := InheritedListeners()
	if err != nil {
		return err
	}
	door, ok := lns["door"]
	if !ok || len(lns) != 1 || os.Getenv(ListenersEnv) != "" {
		return fmt.Errorf("inherited %v, %s=%q; want only door and the variable gone", lns, ListenersEnv, os.Getenv(ListenersEnv))
	}
	c, pods, err := startPods("a")
	if err != nil {
		return err
	}
	defer stopPods(c, pods)
	// The pod's process must not have inherited the host's socket.
	sock, err := socketInode(door)
	if err != nil {
		return err
	}
	fds, _ := filepath.Glob("/proc/" + strconv.Itoa(pods[0].server.Process.Pid) + "/fd/*")
	for _, fd := range fds {
		if target, _ := os.Readlink(fd); target == sock {
			return fmt.Errorf("the pod's process holds the passed listener (%s)", fd)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Forward(ctx, door, podAddr(pods[0].net.IP(), 8080)) }()
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin) // until the test closes stdin
	cancel()
	return <-done
}

// socketInode is "socket:[INODE]" of a listener, as /proc/PID/fd shows it.
// (Not through File: its Fd would put the shared socket in blocking mode
// and hang the listener's Close.)
func socketInode(ln net.Listener) (string, error) {
	rc, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		return "", err
	}
	var st unix.Stat_t
	var statErr error
	if err := rc.Control(func(fd uintptr) { statErr = unix.Fstat(int(fd), &st) }); err != nil {
		return "", err
	}
	if statErr != nil {
		return "", statErr
	}
	return fmt.Sprintf("socket:[%d]", st.Ino), nil
}

func TestAClusterProcessReachesHostLoopbackThroughNetnsListen(t *testing.T) {
	t.Parallel()
	hostLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "host")
	})}
	go func() { _ = srv.Serve(hostLn) }()
	defer srv.Close()

	c := startLive(t, childCmd("reverse", cidrEnv+"=10.251.0.0/16"), true)
	if l := c.line(t); l != "ready" {
		t.Fatalf("child: %q, want ready", l)
	}
	ns, err := NetnsOf(c.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A listener on the cluster's own loopback, served from here: the
	// dial to hostLn happens in the host's namespace.
	ln, err := ns.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Forward(ctx, ln, hostLn.Addr().String()) }()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if _, err := fmt.Fprintln(c.in, port); err != nil {
		t.Fatal(err)
	}
	if got := c.line(t); got != "host" {
		t.Errorf("the cluster's GET of its 127.0.0.1:%s: %q, want host", port, got)
	}
	c.finish(t)
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
}

// reverseChild GETs the port of its own loopback the test names on stdin.
func reverseChild() error {
	c, err := SetupCluster(os.Getenv(cidrEnv))
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	fmt.Println("ready")
	in := bufio.NewReader(os.Stdin)
	port, err := in.ReadString('\n')
	if err != nil {
		return err
	}
	body, err := get("http://127.0.0.1:" + strings.TrimSpace(port) + "/")
	if err != nil {
		return err
	}
	fmt.Println(body)
	_, _ = io.Copy(io.Discard, in)
	return nil
}

// TestForwarderHalfClosesAndStopsWithItsContext runs on loopback in the
// test process: nothing namespaced about it.
func TestForwarderHalfClosesAndStopsWithItsContext(t *testing.T) {
	t.Parallel()
	// The backend answers only once the client has finished writing.
	back, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	go func() {
		for {
			c, err := back.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				n, _ := io.Copy(io.Discard, c)
				fmt.Fprintf(c, "got %d bytes", n)
			}()
		}
	}()
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Forward(ctx, front, back.Addr().String()) }()

	c, err := net.Dial("tcp", front.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(waitLimit))
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(c); err != nil || string(got) != "got 5 bytes" {
		t.Fatalf("answer after half-close: %q, %v", got, err)
	}

	// An idle connection in flight ends with the context.
	idle, err := net.Dial("tcp", front.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	_ = idle.SetDeadline(time.Now().Add(waitLimit))
	if _, err := idle.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve after cancel: %v", err)
	}
	if _, err := io.ReadAll(idle); err != nil && !errors.Is(err, unix.ECONNRESET) {
		t.Fatalf("idle connection after cancel: %v, want its end", err)
	}
}

func TestForwarderLogsAFailedDialAndClosesTheClient(t *testing.T) {
	t.Parallel()
	// A port nobody listens on: a listener opened and closed again.
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := gone.Addr().String()
	_ = gone.Close()
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	fw := &Forwarder{Target: target, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fw.Serve(ctx, front) }()
	defer func() { cancel(); <-done }()
	c, err := net.Dial("tcp", front.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(waitLimit))
	if got, err := io.ReadAll(c); len(got) != 0 || (err != nil && !errors.Is(err, unix.ECONNRESET)) {
		t.Fatalf("client of a failed dial read %q, %v; want the end", got, err)
	}
	deadline := time.Now().Add(waitLimit)
	for !strings.Contains(logs.String(), "dial failed") || !strings.Contains(logs.String(), target) {
		if time.Now().After(deadline) {
			t.Fatalf("log: %q, want the failed dial of %s", logs.String(), target)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestForwarderPicksATargetPerConnection(t *testing.T) {
	t.Parallel()
	var backs []string
	for _, name := range []string{"a", "b"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_, _ = io.WriteString(c, name)
				_ = c.Close()
			}
		}()
		backs = append(backs, ln.Addr().String())
	}
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	picks := []error{nil, nil, errors.New("no ready endpoint")}
	n := 0
	var logs syncbuf.Buffer
	fw := &Forwarder{Log: slog.New(slog.NewTextHandler(&logs, nil)), Pick: func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		i := n
		n++
		return backs[i%2], picks[i%3]
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fw.Serve(ctx, front) }()
	defer func() { cancel(); <-done }()
	for _, want := range []string{"a", "b", ""} {
		c, err := net.Dial("tcp", front.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(waitLimit))
		got, err := io.ReadAll(c)
		_ = c.Close()
		if string(got) != want || (err != nil && !errors.Is(err, unix.ECONNRESET)) {
			t.Errorf("connection read %q, %v; want %q", got, err, want)
		}
	}
	if !strings.Contains(logs.String(), "no ready endpoint") {
		t.Errorf("log %q: want the failed pick", logs.String())
	}
}

// notAFile is a listener with no descriptor to pass.
type notAFile struct{ net.Listener }

func TestPassListenerRefuses(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() }) // after the parallel subtests
	cases := []struct {
		name, pass string
		ln         net.Listener
		want       string
	}{
		{"a name with capitals or commas", "Door,x", ln, "lower-case letters"},
		{"a name passed twice", "door", ln, "already passed"},
		{"a listener without a descriptor", "other", notAFile{ln}, "no descriptor"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := childCmd("forward")
			f, err := PassListener(cmd, "door", ln)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			_, err = PassListener(cmd, tc.pass, tc.ln)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("PassListener(%q) = %v, want %q", tc.pass, err, tc.want)
			}
			if len(cmd.ExtraFiles) != 1 {
				t.Fatalf("a refused listener changed ExtraFiles: %d files", len(cmd.ExtraFiles))
			}
		})
	}
}

func TestPassListenerNumbersDescriptorsAfterTheStandardThree(t *testing.T) {
	t.Parallel()
	cmd := childCmd("forward")
	for _, name := range []string{"api", "door"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		f, err := PassListener(cmd, name, ln)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
	}
	want := ListenersEnv + "=api=3,door=4"
	if cmd.Env[len(cmd.Env)-1] != want {
		t.Fatalf("env ends with %q, want %q", cmd.Env[len(cmd.Env)-1], want)
	}
}

// Not parallel: it sets the process's environment.
func TestInheritedListenersRefusesMalformedEntries(t *testing.T) {
	cases := []struct{ name, env, want string }{
		{"no descriptor number", "door", "not NAME=FD"},
		{"a number that is no number", "door=x", "not NAME=FD"},
		{"one of the standard three", "door=1", "not NAME=FD"},
		{"a descriptor that is not open", "door=" + strconv.Itoa(1<<20), `inherited listener "door"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(ListenersEnv, tc.env)
			lns, err := InheritedListeners()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("InheritedListeners with %s=%q: %v, %v; want %q", ListenersEnv, tc.env, lns, err, tc.want)
			}
		})
	}
	t.Run("nothing passed is an empty map", func(t *testing.T) {
		t.Setenv(ListenersEnv, "")
		lns, err := InheritedListeners()
		if err != nil || len(lns) != 0 {
			t.Fatalf("InheritedListeners with nothing passed: %v, %v", lns, err)
		}
	})
}

package netns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ListenersEnv carries the names and descriptor numbers of the listeners
// PassListener hands to a child: "api=3,door=4".
const ListenersEnv = "PODNET_LISTENERS"

var listenerName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// filer is what a listener needs to be passed on (*net.TCPListener,
// *net.UnixListener).
type filer interface {
	File() (*os.File, error)
}

// PassListener hands ln to the child cmd under name: the listening socket
// is added to cmd.ExtraFiles and its descriptor number recorded in
// ListenersEnv (cmd.Env starts from os.Environ() when nil). The child
// takes it with InheritedListeners.
//
// The socket stays in the namespace it was opened in — a listener on
// 127.0.0.1 of the host keeps taking the host's connections while the
// child, in the cluster namespace, accepts them and dials inside. After
// cmd.Start close the returned file and ln: os/exec hands the descriptor
// over through os.File.Fd, which puts the socket (shared by all its
// duplicates) in blocking mode, so an Accept on ln here would tie up a
// thread and its Close would wait for it. Once only the child holds the
// socket, the port is freed when the child dies.
func PassListener(cmd *exec.Cmd, name string, ln net.Listener) (*os.File, error) {
	if !listenerName.MatchString(name) {
		return nil, fmt.Errorf("pass listener %q: a name is lower-case letters, digits and dashes", name)
	}
	fl, ok := ln.(filer)
	if !ok {
		return nil, fmt.Errorf("pass listener %q: %T has no descriptor to pass", name, ln)
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	i := slices.IndexFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, ListenersEnv+"=") })
	var entries []string
	if i >= 0 {
		if v := strings.TrimPrefix(cmd.Env[i], ListenersEnv+"="); v != "" {
			entries = strings.Split(v, ",")
		}
	}
	for _, e := range entries {
		if strings.HasPrefix(e, name+"=") {
			return nil, fmt.Errorf("pass listener %q: already passed", name)
		}
	}
	f, err := fl.File() // a duplicate, close-on-exec; ExtraFiles clears that in the child
	if err != nil {
		return nil, fmt.Errorf("pass listener %q: %w", name, err)
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	entries = append(entries, name+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
	kv := ListenersEnv + "=" + strings.Join(entries, ",")
	if i >= 0 {
		cmd.Env[i] = kv
	} else {
		cmd.Env = append(cmd.Env, kv)
	}
	return f, nil
}

// InheritedListeners takes the listeners PassListener handed to this
// process, by name. Call it once, early: until then the inherited
// descriptors are not close-on-exec and every child started meanwhile
// (a pod's process) would inherit them. It closes the inherited
// descriptors (the listeners hold close-on-exec duplicates) and unsets
// ListenersEnv. With nothing passed it returns an empty map.
func InheritedListeners() (map[string]net.Listener, error) {
	v := os.Getenv(ListenersEnv)
	_ = os.Unsetenv(ListenersEnv)
	out := map[string]net.Listener{}
	if v == "" {
		return out, nil
	}
	var errs []error
	for _, e := range strings.Split(v, ",") {
		name, num, ok := strings.Cut(e, "=")
		fd, err := strconv.Atoi(num)
		if !ok || err != nil || fd < 3 {
			errs = append(errs, fmt.Errorf("%s: entry %q is not NAME=FD", ListenersEnv, e))
			continue
		}
		f := os.NewFile(uintptr(fd), name)
		ln, err := net.FileListener(f)
		_ = f.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("inherited listener %q (fd %d): %w", name, fd, err))
			continue
		}
		out[name] = ln
	}
	if err := errors.Join(errs...); err != nil {
		for _, ln := range out {
			_ = ln.Close()
		}
		return nil, err
	}
	return out, nil
}

// Forwarder copies every connection accepted on a listener to Target,
// dialed from this process's network namespace.
type Forwarder struct {
	// Target is host:port, dialed once per accepted connection.
	Target string
	// Pick, when set, chooses the target of each accepted connection
	// instead of Target (a Service's ready endpoints, say); an error
	// closes the connection.
	Pick func() (string, error)
	// DialTimeout bounds each dial; 0 means 10 s.
	DialTimeout time.Duration
	// Log receives a line per failed dial; nil discards them.
	Log *slog.Logger
}

// Forward serves ln with a Forwarder to target until ctx ends.
func Forward(ctx context.Context, ln net.Listener, target string) error {
	return (&Forwarder{Target: target}).Serve(ctx, ln)
}

// Serve accepts on ln until ctx ends, then closes ln and every forwarded
// connection and returns nil once they are done. Another accept error
// ends it too and is returned; running out of descriptors only pauses.
// Each direction is half-closed when its source ends, so a client that
// shuts down writing still gets the whole answer.
func (f *Forwarder) Serve(ctx context.Context, ln net.Listener) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
		done  bool
	)
	shutdown := func() {
		_ = ln.Close()
		mu.Lock()
		done = true
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
	}
	stop := context.AfterFunc(ctx, shutdown)
	defer stop()
	track := func(c net.Conn) bool {
		mu.Lock()
		defer mu.Unlock()
		if done {
			_ = c.Close()
			return false
		}
		conns[c] = struct{}{}
		return true
	}
	untrack := func(c net.Conn) {
		mu.Lock()
		delete(conns, c)
		mu.Unlock()
		_ = c.Close()
	}
	backoff := 5 * time.Millisecond
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil && (errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)) {
				time.Sleep(backoff) // descriptors free up as connections end
				backoff = min(2*backoff, time.Second)
				continue
			}
			shutdown()
			wg.Wait()
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("forward %s to %s: %w", ln.Addr(), f.Target, err)
		}
		backoff = 5 * time.Millisecond
		if !track(c) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer untrack(c)
			f.pipe(ctx, c, track, untrack)
		}()
	}
}

// pipe dials the target for the accepted connection c and copies both
// ways until both directions have ended.
func (f *Forwarder) pipe(ctx context.Context, c net.Conn, track func(net.Conn) bool, untrack func(net.Conn)) {
	timeout := f.DialTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	target := f.Target
	if f.Pick != nil {
		var err error
		if target, err = f.Pick(); err != nil {
			if f.Log != nil {
				f.Log.Warn("forward: no target", "from", c.RemoteAddr().String(), "err", err)
			}
			return
		}
	}
	d := net.Dialer{Timeout: timeout}
	up, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		if f.Log != nil {
			f.Log.Warn("forward: dial failed", "from", c.RemoteAddr().String(), "target", target, "err", err)
		}
		return
	}
	if !track(up) {
		return
	}
	defer untrack(up)
	var both sync.WaitGroup
	both.Add(1)
	go func() { defer both.Done(); copyHalf(up, c) }()
	copyHalf(c, up)
	both.Wait()
}

// copyHalf copies src to dst, then shuts down writing on dst so the other
// side sees the end. A failed copy (a reset) ends both connections: the
// other direction would otherwise wait on a peer that is gone.
func copyHalf(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	cw, ok := dst.(interface{ CloseWrite() error })
	if err == nil && ok && cw.CloseWrite() == nil {
		return
	}
	_ = dst.Close()
	_ = src.Close()
}

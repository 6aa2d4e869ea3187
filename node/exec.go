package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podgate/podgate/node/images"
	"github.com/podgate/podgate/node/kubeletapi"
	"github.com/podgate/podgate/node/proc"
)

// execLookupTimeout bounds the wait for a pod worker's answer about a
// container: a worker that has finished never answers.
const execLookupTimeout = 10 * time.Second

// execTarget is what a command run in a container runs with: the
// container's environment, working directory, user, mounts and network.
type execTarget struct {
	env   []string
	dir   string
	image string
	sec   *proc.Security
	enter func(func() error) error
	err   error
}

// evExec asks the pod worker, the one goroutine that owns the
// containers, for a running container's execTarget.
type evExec struct {
	container string
	reply     chan execTarget
}

// onExec answers evExec.
func (p *pod) onExec(ev evExec) {
	c := p.byName[ev.container]
	switch {
	case c == nil:
		ev.reply <- execTarget{err: apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", ev.container, p.name))}
		return
	case !c.running || c.proc == nil:
		ev.reply <- execTarget{err: apierrors.NewBadRequest(fmt.Sprintf("container %s of pod %s is not running", ev.container, p.name))}
		return
	}
	sec, err := p.security(c)
	ev.reply <- execTarget{env: c.cfg.Env.Strings(), dir: c.cfg.Dir, image: c.spec.Image, sec: sec, enter: p.enter(), err: err}
}

// target asks the worker of namespace/name for container's execTarget.
func (a *Agent) target(ctx context.Context, namespace, name, container string) (execTarget, error) {
	p := a.pod(namespace, name)
	if p == nil {
		return execTarget{}, apierrors.NewNotFound(podsResource, name)
	}
	reply := make(chan execTarget, 1)
	p.post(evExec{container: container, reply: reply})
	t := time.NewTimer(execLookupTimeout)
	defer t.Stop()
	select {
	case got := <-reply:
		return got, got.err
	case <-ctx.Done():
		return execTarget{}, ctx.Err()
	case <-t.C:
		return execTarget{}, apierrors.NewNotFound(podsResource, name)
	}
}

// Exec implements kubeletapi.Pods: cmd runs as the container's own
// process does — its environment and working directory, its user,
// capabilities and mounts (its securityContext and volumes), inside the
// pod's network — supervised like it (it dies with the node), in a
// process group of its own that is killed when ctx ends: a client that
// went away leaves nothing running (a kubelet's runtime leaves it).
func (a *Agent) Exec(ctx context.Context, namespace, name, container string, cmd []string, streams kubeletapi.ExecIO) (int, error) {
	if len(cmd) == 0 {
		return -1, apierrors.NewBadRequest("command: required")
	}
	t, err := a.target(ctx, namespace, name, container)
	if err != nil {
		return -1, err
	}
	argv := a.opts.Images.Command(t.image, cmd)
	pathEnv := ""
	for _, kv := range t.env {
		if len(kv) > 5 && kv[:5] == "PATH=" {
			pathEnv = kv[5:]
		}
	}
	path, err := images.LookPath(argv[0], t.dir, pathEnv)
	if err != nil {
		// What runc says: kubectl shows it.
		return -1, fmt.Errorf("exec: %w", err)
	}
	spec := proc.Spec{Path: path, Args: argv, Env: t.env, Dir: t.dir, Enter: t.enter, Security: t.sec,
		Stdout: streams.Stdout, Stderr: streams.Stderr}
	if streams.TTY {
		return a.execTerminal(ctx, spec, streams)
	}
	return a.execPiped(ctx, spec, streams.Stdin)
}

// execPiped runs spec with its output to the streams and stdin, if any,
// copied into a pipe: its end is the command's end of input.
func (a *Agent) execPiped(ctx context.Context, spec proc.Spec, stdin io.Reader) (int, error) {
	var inW *os.File
	if stdin != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return -1, fmt.Errorf("exec: stdin: %w", err)
		}
		spec.Stdin, inW = r, w
	}
	pr, err := a.sup.Start(spec)
	if spec.Stdin != nil {
		spec.Stdin.Close()
	}
	if err != nil {
		if inW != nil {
			inW.Close()
		}
		return -1, fmt.Errorf("exec: %w", err)
	}
	if inW != nil {
		go func() {
			// Ends at the input's end, or once the command is gone (a
			// write fails); the reader is the caller's to close.
			_, _ = io.Copy(inW, stdin)
			inW.Close()
		}()
	}
	return wait(ctx, pr), nil
}

// wait waits for pr's exit, killing its group when ctx ends first.
func wait(ctx context.Context, pr *proc.Process) int {
	select {
	case <-pr.Done():
	case <-ctx.Done():
		pr.Kill()
	}
	return pr.Exit().Code
}

// execTerminal runs spec on a pseudo-terminal of its own: its output to
// Stdout, Stdin typed into it, each size from Resize applied to it.
func (a *Agent) execTerminal(ctx context.Context, spec proc.Spec, streams kubeletapi.ExecIO) (int, error) {
	pty, err := openPTY()
	if err != nil {
		return -1, fmt.Errorf("exec: terminal: %w", err)
	}
	defer pty.leader.Close()
	spec.TTY = pty.follower
	pr, err := a.sup.Start(spec)
	pty.follower.Close()
	if err != nil {
		return -1, fmt.Errorf("exec: %w", err)
	}
	var out sync.WaitGroup
	out.Add(1)
	go func() {
		defer out.Done()
		if streams.Stdout != nil {
			_, _ = io.Copy(streams.Stdout, pty.leader) // EIO once no process holds the terminal
		}
	}()
	if streams.Stdin != nil {
		go func() { _, _ = io.Copy(pty.leader, streams.Stdin) }()
	}
	stopResize := make(chan struct{})
	defer close(stopResize)
	go func() {
		for {
			select {
			case sz, ok := <-streams.Resize:
				if !ok {
					return
				}
				_ = pty.resize(sz.Width, sz.Height)
			case <-stopResize:
				return
			}
		}
	}()
	code := wait(ctx, pr)
	// The command's output is read to its end; a process it left in the
	// background holding the terminal does not hold the session up.
	done := make(chan struct{})
	go func() { out.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		pty.leader.Close()
		<-done
	}
	return code, nil
}

// DialPort implements kubeletapi.Pods: a connection to localhost:port
// made inside the pod's network namespace (on the loopback network, to
// the pod's own address, where its programs listen).
func (a *Agent) DialPort(ctx context.Context, namespace, name string, port uint16) (net.Conn, error) {
	p := a.pod(namespace, name)
	if p == nil {
		return nil, apierrors.NewNotFound(podsResource, name)
	}
	d := net.Dialer{Timeout: 10 * time.Second}
	enter := p.enter()
	if enter == nil {
		host := p.ip
		if !host.IsValid() {
			host = netip.MustParseAddr("127.0.0.1")
		}
		return d.DialContext(ctx, "tcp", net.JoinHostPort(host.String(), strconv.Itoa(int(port))))
	}
	var conn net.Conn
	errc := make(chan error, 1)
	// A goroutine of its own: should the way back fail, Enter leaves its
	// thread locked, and Go ends it with the goroutine.
	go func() {
		errc <- enter(func() error {
			var err error
			conn, err = d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
			return err
		})
	}()
	if err := <-errc; err != nil {
		if conn != nil {
			conn.Close()
		}
		return nil, errors.Join(fmt.Errorf("pod %s/%s port %d", namespace, name, port), err)
	}
	return conn, nil
}

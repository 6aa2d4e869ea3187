package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/podgate/podgate/local/podctl"
)

// Config says how to start `podgate run`.
type Config struct {
	// Binary is the podgate executable.
	Binary string
	// PodCIDR is the range the pods' addresses come from; each Process
	// that runs at the same time needs its own (inside 127.0.0.0/8).
	PodCIDR string
	// Files are the manifests, passed as -f FILE each.
	Files []string
	// Args are further `podgate run` flags (e.g. --replicas 2).
	Args []string
	// StartTimeout bounds the wait for the startup lines; default 60 s.
	StartTimeout time.Duration
}

// Process is a running `podgate run`: its control API, its front door, a
// control API client, and its output kept for failure logs.
type Process struct {
	cmd    *exec.Cmd
	stdout *Output
	stderr *Output
	done   chan struct{} // closed once the process was reaped
	err    error         // Wait's error, valid after done

	api    string
	door   string
	client *podctl.Client
}

// Start runs `podgate run --api 127.0.0.1:0 --listen 127.0.0.1:0
// --pod-cidr CIDR -f FILE… ARGS…` and waits until it printed where its
// control API and front door listen. ctx bounds only the start; Stop ends
// the process. On error the process is gone and the error carries its
// stderr.
func Start(ctx context.Context, cfg Config) (*Process, error) {
	if cfg.Binary == "" {
		return nil, errors.New("lab: Config.Binary is required")
	}
	if err := checkLoopbackCIDR(cfg.PodCIDR); err != nil {
		return nil, err
	}
	if len(cfg.Files) == 0 {
		return nil, errors.New("lab: Config.Files: at least one manifest is required")
	}
	timeout := cfg.StartTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	args := []string{"run", "--api", "127.0.0.1:0", "--listen", "127.0.0.1:0", "--pod-cidr", cfg.PodCIDR}
	for _, f := range cfg.Files {
		args = append(args, "-f", f)
	}
	args = append(args, cfg.Args...)

	p := &Process{stdout: NewOutput(), stderr: NewOutput(), done: make(chan struct{})}
	p.cmd = exec.Command(cfg.Binary, args...)
	// exec copies into these itself; WaitDelay bounds the copy should a
	// descendant keep the pipes open after podgate exited.
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("lab: starting %s: %w", cfg.Binary, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()

	startCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addrs, err := p.awaitStartup(startCtx)
	if err != nil {
		_, _ = p.Stop(0)
		return nil, fmt.Errorf("lab: podgate run %v: %w\nstderr:\n%s", args[1:], err, p.Stderr())
	}
	p.api, p.door = addrs.api, addrs.door
	if p.client, err = podctl.NewClient(p.api); err != nil {
		_, _ = p.Stop(0)
		return nil, fmt.Errorf("lab: control API client: %w", err)
	}
	return p, nil
}

// awaitStartup reads stderr as it grows until both addresses are printed.
func (p *Process) awaitStartup(ctx context.Context) (addresses, error) {
	for {
		text, changed := p.stderr.Snapshot()
		if a, ok := parseAddresses(text); ok {
			return a, nil
		}
		select {
		case <-changed:
		case <-p.done:
			if a, ok := parseAddresses(p.stderr.String()); ok {
				return a, nil
			}
			return addresses{}, fmt.Errorf("exited before printing its addresses (%v)", p.err)
		case <-ctx.Done():
			return addresses{}, fmt.Errorf("no control API and front door lines on stderr: %w", ctx.Err())
		}
	}
}

// checkLoopbackCIDR refuses pod ranges off loopback before podgate does,
// with the lab's own words: scenarios never touch other addresses.
func checkLoopbackCIDR(cidr string) error {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return fmt.Errorf("lab: Config.PodCIDR %q: %w", cidr, err)
	}
	if !n.IP.IsLoopback() {
		return fmt.Errorf("lab: Config.PodCIDR %q: must lie in 127.0.0.0/8", cidr)
	}
	return nil
}

// APIAddr is the control API's HOST:PORT.
func (p *Process) APIAddr() string { return p.api }

// FrontDoor is the front door's HOST:PORT.
func (p *Process) FrontDoor() string { return p.door }

// Pid is the podgate process's ID (benchmarks read its CPU time).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// FrontDoorURL is the front door's base URL, http://HOST:PORT/.
func (p *Process) FrontDoorURL() string { return "http://" + p.door + "/" }

// Client is a control API client; Stop closes it.
func (p *Process) Client() *podctl.Client { return p.client }

// Routes are the hosts the front door routes, as printed so far: the
// curl lines follow the front door line that Start waits for, so right
// after Start some may still be on their way (WaitRoute).
func (p *Process) Routes() []string {
	a, _ := parseAddresses(p.stderr.String())
	return a.routes
}

// WaitRoute waits until podgate printed the curl line of host. (The route
// itself works from the first request on: the lines are printed after
// the front door started serving.)
func (p *Process) WaitRoute(ctx context.Context, host string) error {
	for {
		text, changed := p.stderr.Snapshot()
		a, _ := parseAddresses(text)
		if slices.Contains(a.routes, host) {
			return nil
		}
		select {
		case <-changed:
		case <-p.done:
			if slices.Contains(p.Routes(), host) {
				return nil
			}
			return fmt.Errorf("lab: podgate exited without a route for %s (routes %v)", host, a.routes)
		case <-ctx.Done():
			return fmt.Errorf("lab: no route for %s printed (routes %v): %w", host, a.routes, ctx.Err())
		}
	}
}

// Stdout is podgate's standard output so far: every container's output,
// prefixed POD/CONTAINER.
func (p *Process) Stdout() string { return p.stdout.String() }

// Stderr is podgate's own log so far.
func (p *Process) Stderr() string { return p.stderr.String() }

// Done is closed once the process has exited and was reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop sends SIGTERM (podgate's graceful stop: every pod drains and gets
// its grace period) and waits up to grace for the exit; then SIGKILL.
// It returns the exit code (-1 when killed by a signal) and an error when
// SIGKILL was needed. It may be called more than once.
func (p *Process) Stop(grace time.Duration) (int, error) {
	if p.client != nil {
		defer p.client.Close()
	}
	var killed error
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		timer := time.NewTimer(grace)
		select {
		case <-p.done:
			timer.Stop()
		case <-timer.C:
			_ = p.cmd.Process.Kill()
			<-p.done
			killed = fmt.Errorf("lab: podgate did not stop within %s of SIGTERM: killed", grace)
		}
	}
	return p.cmd.ProcessState.ExitCode(), killed
}

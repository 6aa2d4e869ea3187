//go:build unix

package probe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/podgate/podgate/internal/procgroup"
)

// pipeGrace bounds how long output is collected after the command's process
// group is gone: only a process that left the group (setsid) can still hold
// the pipes, and its output is not worth blocking the probe for.
const pipeGrace = 500 * time.Millisecond

// HostExecutor runs exec probes as processes on this host: the local
// runtime's stand-in for the container runtime's ExecSync.
//
// The command runs in its own process group. When ctx ends (timeout, or the
// worker stopping) the whole group is killed with SIGKILL, grandchildren
// included; the kubelet leaves a timed-out probe running and never cancels
// one on worker stop. Processes the command leaves in the background are
// killed when it exits too: on a host they would otherwise pile up, one per
// period.
type HostExecutor struct {
	// Dir is the working directory; empty means this process's.
	Dir string
	// Env is the environment; nil means this process's. Its PATH, if any,
	// is where argv[0] is looked up.
	Env []string
	// Enter, when set, wraps the fork: it calls its start function after
	// moving the calling thread into the container's context (a pod's
	// network namespace), so the command runs there, and moves the thread
	// back. It is called on a goroutine of its own that ends right after:
	// should the way back fail, Enter leaves the thread locked and Go ends
	// it with that goroutine, so no other code ever runs in the wrong
	// namespace.
	Enter func(start func() error) error
}

// Exec implements Executor. The output is stdout followed by stderr, each
// kept up to MaxExecOutput bytes (the rest is drained and dropped, so a
// chatty command never blocks on a full pipe).
func (h HostExecutor) Exec(ctx context.Context, argv []string) ([]byte, int, error) {
	if len(argv) == 0 {
		return nil, -1, errors.New("exec probe: empty command")
	}
	path, err := h.lookPath(argv[0])
	if err != nil {
		return nil, -1, err
	}

	// Our own pipes instead of exec.Cmd's copying: Wait then returns as
	// soon as the process exits, and we decide how long to read after it.
	outR, outW, errR, errW, err := procgroup.Pipes()
	if err != nil {
		return nil, -1, fmt.Errorf("exec probe %q: %w", argv[0], err)
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        argv,
		Dir:         h.Dir,
		Env:         h.Env,
		Stdout:      outW,
		Stderr:      errW,
		SysProcAttr: procgroup.Attr(false),
	}
	if err := h.start(cmd); err != nil {
		procgroup.CloseAll(outR, outW, errR, errW)
		return nil, -1, err
	}
	procgroup.CloseAll(outW, errW) // the child holds its own copies

	var stdout, stderr []byte
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); stdout = drain(outR) }()
	go func() { defer readers.Done(); stderr = drain(errR) }()

	pid := cmd.Process.Pid
	type exit struct {
		reaped bool
		err    error
	}
	exited := make(chan exit, 1)
	go func() {
		reaped, err := procgroup.WaitExited(cmd)
		exited <- exit{reaped, err}
	}()
	var ctxErr error
	var e exit
	select {
	case e = <-exited:
	case <-ctx.Done():
		ctxErr = ctx.Err()
		procgroup.Kill(pid, syscall.SIGKILL)
		e = <-exited
	}
	runErr := e.err
	if !e.reaped {
		// The leader is a zombie, not yet reaped, so its pid cannot name
		// another process group yet: sweeping the group now is safe.
		procgroup.Kill(pid, syscall.SIGKILL)
		runErr = cmd.Wait()
	}

	procgroup.FinishReading(&readers, pipeGrace, outR, errR)
	out := append(stdout, stderr...)

	if ctxErr != nil {
		return out, -1, fmt.Errorf("exec probe %q killed: %w", argv[0], ctxErr)
	}
	var exitErr *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exitErr) {
		return out, -1, fmt.Errorf("exec probe %q: %w", argv[0], runErr)
	}
	return out, cmd.ProcessState.ExitCode(), nil
}

// start starts cmd, inside Enter when there is one (see HostExecutor).
func (h HostExecutor) start(cmd *exec.Cmd) error {
	if h.Enter == nil {
		return cmd.Start()
	}
	done := make(chan error, 1)
	go func() { done <- h.Enter(cmd.Start) }()
	err := <-done
	if err != nil && cmd.Process != nil {
		// Started, but the way back failed: the command must not run on
		// unattended.
		procgroup.Kill(cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}
	return err
}

// lookPath finds argv[0] the way a container runtime would: a name with a
// slash is used as is (relative to Dir), a bare name is searched in the
// PATH of Env (or of this process when Env has none).
func (h HostExecutor) lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	pathEnv, ok := envValue(h.Env, "PATH")
	if h.Env == nil || !ok {
		return exec.LookPath(name)
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // relative PATH entries are a hazard; exec.LookPath refuses them too
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// envValue is the last value of key in env, as exec.Cmd would pass it.
func envValue(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// drain reads r to the end, keeping the first MaxExecOutput bytes.
func drain(r *os.File) []byte {
	var kept []byte
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		if room := MaxExecOutput - len(kept); room > 0 {
			kept = append(kept, buf[:min(n, room)]...)
		}
		if err != nil {
			return kept
		}
	}
}

package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// DefaultDownTimeout bounds Down's wait for a graceful stop (pods get
// their grace period, 30 s by default) before it kills what is left.
const DefaultDownTimeout = 90 * time.Second

// ErrNotRunning is Down's answer when no cluster runs in the directory.
var ErrNotRunning = errors.New("no cluster runs there")

// Down stops the cluster recorded in dir's pid file — one whose `podgate
// cluster up` was killed, or one running in another terminal: SIGTERM to
// the cluster process (which stops the node, killing its pods at once if
// it was already stopping, then the control plane), SIGKILL to every
// process of its session after timeout (0: DefaultDownTimeout), and it
// returns once none is left, with the pid file, the kubeconfig and the
// pods' directory removed. With no cluster running it returns an error wrapping
// ErrNotRunning, after removing a stale pid file.
func Down(ctx context.Context, dir string, timeout time.Duration, stderr io.Writer) error {
	if stderr == nil {
		stderr = io.Discard
	}
	if timeout <= 0 {
		timeout = DefaultDownTimeout
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	rec, err := readPidFile(dir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s has no %s", ErrNotRunning, dir, PidFile)
	}
	if err != nil {
		return err
	}
	alive := isRecorded(rec)
	left := SessionMembers(rec.Pid)
	if !alive && len(left) == 0 {
		removeRecord(dir)
		return fmt.Errorf("%w: the cluster process %d of %s has ended (its pid file is removed now)", ErrNotRunning, rec.Pid, dir)
	}
	if alive {
		fmt.Fprintf(stderr, "podgate: stopping the cluster in %s (process %d)\n", dir, rec.Pid)
		_ = syscall.Kill(rec.Pid, syscall.SIGTERM)
		waitGone(ctx, func() bool { return !isRecorded(rec) }, timeout)
	}
	if left = SessionMembers(rec.Pid); len(left) > 0 {
		fmt.Fprintf(stderr, "podgate: killing %d process(es) left of the cluster\n", len(left))
		signalAll(left, syscall.SIGKILL)
	}
	if !waitGone(context.WithoutCancel(ctx), func() bool { return len(SessionMembers(rec.Pid)) == 0 }, leftoverWait) {
		return fmt.Errorf("processes of the cluster still run after SIGKILL: %v", SessionMembers(rec.Pid))
	}
	removeRecord(dir)
	fmt.Fprintf(stderr, "podgate: the cluster in %s is stopped\n", dir)
	return nil
}

// waitGone polls gone until it holds, timeout passes or ctx ends.
func waitGone(ctx context.Context, gone func() bool, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for !gone() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// removeRecord removes what a stopped cluster leaves that would mislead:
// its pid file and kubeconfig, and its pods' directory outside dir (see
// PodsDir), which a cluster that was killed did not remove itself.
func removeRecord(dir string) {
	for _, name := range []string{PidFile, KubeconfigFile} {
		_ = os.Remove(filepath.Join(dir, name))
	}
	_ = os.RemoveAll(filepath.Dir(PodsDir(dir)))
}

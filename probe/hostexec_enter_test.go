//go:build linux

package probe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const threadNetnsPath = "/proc/thread-self/ns/net"

// enterNewNetns is a HostExecutor.Enter that starts the command in a new,
// empty network namespace (needs root) and comes back; entered receives
// the namespace's name. With stay it does not come back, as an Enter
// whose way back was refused: it leaves the thread locked and fails, once
// the command wrote pidFile.
func enterNewNetns(entered chan<- string, stay bool, pidFile string) func(func() error) error {
	return func(start func() error) error {
		runtime.LockOSThread()
		back, err := unix.Open(threadNetnsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			return err
		}
		defer func() { _ = unix.Close(back) }()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			return fmt.Errorf("unshare: %w", err)
		}
		ns, _ := os.Readlink(threadNetnsPath)
		entered <- ns
		startErr := start()
		if stay {
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
					break
				}
			}
			return errors.Join(startErr, errors.New("the way back was refused"))
		}
		if err := unix.Setns(back, unix.CLONE_NEWNET); err != nil {
			return errors.Join(startErr, err)
		}
		runtime.UnlockOSThread()
		return startErr
	}
}

// threadsAway lists the test process's threads outside its network
// namespace (the main thread's).
func threadsAway() []string {
	own, _ := os.Readlink("/proc/self/ns/net")
	var away []string
	tasks, _ := filepath.Glob("/proc/self/task/*/ns/net")
	for _, task := range tasks {
		if ns, err := os.Readlink(task); err == nil && ns != own {
			away = append(away, task+" in "+ns)
		}
	}
	return away
}

// TestHostExecutorEnter is not parallel: it checks that no thread of the
// test process stays in another namespace, which a parallel test's Enter
// could be in for a moment.
func TestHostExecutorEnter(t *testing.T) {
	own, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		stay     bool
		wantCode int
		wantErr  string
	}{
		{"the command runs in the namespace Enter entered", false, 0, ""},
		{"an Enter that cannot come back is an error, its command does not run on, its thread ends", true, -1, "the way back was refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			entered := make(chan string, 1)
			ex := HostExecutor{Enter: enterNewNetns(entered, tc.stay, pidFile)}
			// The command reports its namespace; in the failing case it
			// would run on, but is killed.
			argv := []string{"/bin/sh", "-c", "echo $$ > " + pidFile + "; readlink /proc/self/ns/net; [ -n \"$STAY\" ] && exec sleep 600; exit 0"}
			if tc.stay {
				ex.Env = []string{"STAY=1"}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, code, err := ex.Exec(ctx, argv)
			ns := <-entered
			if ns == own || ns == "" {
				t.Fatalf("Enter entered %q, want a new namespace", ns)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || code != tc.wantCode {
					t.Errorf("Exec = %d, %v, want %d and %q", code, err, tc.wantCode, tc.wantErr)
				}
				waitGone(t, readPid(t, pidFile))
			} else if err != nil || code != 0 || strings.TrimSpace(string(out)) != ns {
				t.Errorf("Exec = %d, %q, %v; want 0 and the entered %s", code, out, err, ns)
			}
			deadline := time.Now().Add(30 * time.Second)
			for away := threadsAway(); len(away) > 0; away = threadsAway() {
				if time.Now().After(deadline) {
					t.Fatalf("threads left in another namespace: %v", away)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

//go:build linux

package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// threadNetnsPath is the calling thread's network namespace.
const threadNetnsPath = "/proc/thread-self/ns/net"

// intoNewNetns is a Spec.Enter that forks inside a new, empty network
// namespace (needs root) and comes back; entered receives its name.
func intoNewNetns(entered *string) func(func() error) error {
	return func(start func() error) error {
		back, err := unix.Open(threadNetnsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open own namespace: %w", err)
		}
		defer func() { _ = unix.Close(back) }()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare: %w", err)
		}
		*entered, _ = os.Readlink(threadNetnsPath)
		startErr := start()
		if err := unix.Setns(back, unix.CLONE_NEWNET); err != nil {
			return errors.Join(startErr, fmt.Errorf("setns back: %w", err))
		}
		return startErr
	}
}

// strandedIn is a Spec.Enter whose way back fails: it moves the thread
// into a new namespace, forks there and stays, as an Enter whose setns
// back was refused would.
func strandedIn(entered *string) func(func() error) error {
	return func(start func() error) error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare: %w", err)
		}
		*entered, _ = os.Readlink(threadNetnsPath)
		return errors.Join(start(), errors.New("the way back was refused"))
	}
}

func init() {
	var entered string
	helperEnters["enter-netns"] = intoNewNetns(&entered)
}

func netnsOf(t *testing.T, pid int) string {
	t.Helper()
	ns, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func TestEnterWrapsTheFork(t *testing.T) {
	t.Parallel()
	s := newSupervisor(t)
	own := netnsOf(t, os.Getpid())
	for _, tc := range []struct {
		name    string
		path    string
		wantErr string
	}{
		{"the child starts in the namespace Enter entered", "/bin/sleep", ""},
		{"a start that fails inside Enter is the start's error", "/nonexistent/podgate-test-binary", "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var entered string
			p, err := s.Start(Spec{Path: tc.path, Args: []string{"sleep", "600"}, Enter: intoNewNetns(&entered)})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.Is(err, ErrSpawnerStopped) {
					t.Fatalf("Start = %v, want %q (and not ErrSpawnerStopped)", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() { p.Kill(); waitDone(t, p) }()
			if got := netnsOf(t, p.Pid); got != entered || got == own {
				t.Errorf("child in %s, want the entered %s (the test's own is %s)", got, entered, own)
			}
		})
	}
	// The spawner's thread came back each time: a plain start is home.
	p, err := s.Start(Spec{Path: "/bin/sleep", Args: []string{"sleep", "600"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { p.Kill(); waitDone(t, p) }()
	if got := netnsOf(t, p.Pid); got != own {
		t.Errorf("a start without Enter after Enters is in %s, want %s", got, own)
	}
}

// TestAStrandedSpawnerStopsAndItsThreadEnds is not parallel: it checks
// that no thread of the test process is left in another namespace, which
// a parallel test's Enter could be for a moment.
func TestAStrandedSpawnerStopsAndItsThreadEnds(t *testing.T) {
	s, err := NewSupervisor(Options{})
	if err != nil {
		t.Fatal(err)
	}
	before, err := s.Start(Spec{Path: "/bin/sleep", Args: []string{"sleep", "600"}})
	if err != nil {
		t.Fatal(err)
	}
	var entered string
	_, err = s.Start(Spec{Path: "/bin/sleep", Args: []string{"sleep", "600"}, Enter: strandedIn(&entered)})
	if !errors.Is(err, ErrSpawnerStopped) || !strings.Contains(err.Error(), "the way back was refused") || !strings.Contains(err.Error(), entered) {
		t.Fatalf("Start whose Enter strands the thread = %v, want ErrSpawnerStopped naming %s and the cause", err, entered)
	}
	if _, err := s.Start(Spec{Path: "/bin/sleep", Args: []string{"sleep", "600"}}); !errors.Is(err, ErrSpawnerStopped) {
		t.Errorf("a later Start = %v, want ErrSpawnerStopped", err)
	}
	if n := s.Live(); n != 1 {
		t.Errorf("Live() = %d, want 1: the process forked in the stranded Enter must not be left running", n)
	}
	select {
	case <-before.Done():
		t.Fatalf("a process started before the spawner stopped exited: %+v", before.Exit())
	default:
	}
	// The scan below must see the stranded thread while it lives, or its
	// "ended" would mean nothing.
	if away := threadsAway(t); len(away) != 1 || !strings.HasSuffix(away[0], entered) {
		t.Errorf("threads away before Close: %v, want the spawner's in %s", away, entered)
	}
	s.Close()
	if e := waitDone(t, before); e.Code != 137 {
		t.Errorf("exit %+v, want SIGKILL by Close", e)
	}
	// Close returned the spawner locked: Go ends its thread.
	deadline := time.Now().Add(waitLimit)
	for {
		away := threadsAway(t)
		if len(away) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("threads left in another namespace after Close: %v", away)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// threadsAway lists the test process's threads that are not in its
// network namespace (the main thread's), as "TASK in NS".
func threadsAway(t *testing.T) []string {
	t.Helper()
	own := netnsOf(t, os.Getpid())
	var away []string
	tasks, _ := filepath.Glob("/proc/self/task/*/ns/net")
	for _, task := range tasks {
		if ns, err := os.Readlink(task); err == nil && ns != own {
			away = append(away, task+" in "+ns)
		}
	}
	return away
}

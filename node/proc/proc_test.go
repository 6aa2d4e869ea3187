package proc

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podgate/podgate/test/syncbuf"
)

const waitLimit = 30 * time.Second

func newSupervisor(t *testing.T) *Supervisor {
	t.Helper()
	s, err := NewSupervisor(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func sh(script string, out, errOut *syncbuf.Buffer) Spec {
	sp := Spec{Path: "/bin/sh", Args: []string{"sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"}}
	if out != nil {
		sp.Stdout = out
	}
	if errOut != nil {
		sp.Stderr = errOut
	}
	return sp
}

func waitDone(t *testing.T, p *Process) Exit {
	t.Helper()
	select {
	case <-p.Done():
		return p.Exit()
	case <-time.After(waitLimit):
		t.Fatalf("process %d did not exit within %s", p.Pid, waitLimit)
		return Exit{}
	}
}

// alive reports whether pid runs: a zombie nobody reaped yet counts as
// dead (orphans are reparented to an init that may be slow to reap).
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}

func waitGone(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d still alive after %s", pid, waitLimit)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestExitCodesAndOutput(t *testing.T) {
	t.Parallel()
	s := newSupervisor(t)
	for _, tc := range []struct {
		name     string
		script   string
		signal   syscall.Signal
		wantCode int
		wantSig  syscall.Signal
	}{
		{"exit status is reported", "echo out; echo err >&2; exit 3", 0, 3, 0},
		{"exit 0 is reported", "echo out; echo err >&2", 0, 0, 0},
		{"SIGTERM reads as 143", "echo out; echo err >&2; exec sleep 600", syscall.SIGTERM, 143, syscall.SIGTERM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut syncbuf.Buffer
			p, err := s.Start(sh(tc.script, &out, &errOut))
			if err != nil {
				t.Fatal(err)
			}
			if tc.signal != 0 {
				// The output is written before the exec: once it is
				// there, the shell has become sleep.
				deadline := time.Now().Add(waitLimit)
				for !strings.Contains(errOut.String(), "err") && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				if err := p.Signal(tc.signal); err != nil {
					t.Fatal(err)
				}
			}
			e := waitDone(t, p)
			if e.Code != tc.wantCode || e.Signal != tc.wantSig {
				t.Errorf("exit = code %d signal %v, want %d %v", e.Code, e.Signal, tc.wantCode, tc.wantSig)
			}
			if out.String() != "out\n" || errOut.String() != "err\n" {
				t.Errorf("stdout %q stderr %q, want \"out\\n\" and \"err\\n\"", out.String(), errOut.String())
			}
		})
	}
}

func TestGroupDiesWithItsLeader(t *testing.T) {
	t.Parallel()
	s := newSupervisor(t)
	var out syncbuf.Buffer
	// The background sleep keeps the pipe open too: Done must not wait
	// for it.
	p, err := s.Start(sh(`sleep 600 & echo "$!"; exit 0`, &out, nil))
	if err != nil {
		t.Fatal(err)
	}
	if e := waitDone(t, p); e.Code != 0 {
		t.Fatalf("exit code %d, want 0", e.Code)
	}
	child, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatalf("child pid %q: %v", out.String(), err)
	}
	waitGone(t, child)
}

func TestSignalGoesToTheLeaderOnly(t *testing.T) {
	t.Parallel()
	s := newSupervisor(t)
	var out syncbuf.Buffer
	// The shell traps TERM and reports it; its child must not see it.
	p, err := s.Start(sh(`trap 'echo leader-got-term; exit 7' TERM; sh -c 'trap "echo child-got-term" TERM; sleep 600 & wait' & echo started; wait`, &out, nil))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitLimit)
	for !strings.Contains(out.String(), "started") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if e := waitDone(t, p); e.Code != 7 {
		t.Errorf("exit code %d, want 7 (the leader's trap)", e.Code)
	}
	if got := out.String(); !strings.Contains(got, "leader-got-term") || strings.Contains(got, "child-got-term") {
		t.Errorf("output %q: want only the leader to see SIGTERM", got)
	}
}

func TestCloseKillsWhatIsLeft(t *testing.T) {
	t.Parallel()
	s, err := NewSupervisor(Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out syncbuf.Buffer
	p, err := s.Start(sh(`trap '' TERM; sleep 600 & echo "$!"; wait`, &out, nil))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitLimit)
	for !strings.Contains(out.String(), "\n") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	child, _ := strconv.Atoi(strings.TrimSpace(out.String()))
	s.Close()
	if e := waitDone(t, p); e.Signal != syscall.SIGKILL {
		t.Errorf("exit %+v, want SIGKILL", e)
	}
	waitGone(t, p.Pid, child)
	if _, err := s.Start(sh("true", nil, nil)); err != ErrClosed {
		t.Errorf("Start after Close = %v, want ErrClosed", err)
	}
}

func TestStartErrorIsReturned(t *testing.T) {
	t.Parallel()
	s := newSupervisor(t)
	_, err := s.Start(Spec{Path: "/nonexistent/podgate-test-binary"})
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("err = %v, want no such file", err)
	}
	if n := s.Live(); n != 0 {
		t.Errorf("Live() = %d after a failed start, want 0", n)
	}
}

// TestNothingSurvivesASIGKILLedParent runs a stand-in for podgate (this
// test binary in helper mode), kills it with SIGKILL, and checks what
// survives.
func TestNothingSurvivesASIGKILLedParent(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		mode           string
		grandchildDies bool
	}{
		{"parent-death signal kills the direct child", "no-guardian", false},
		{"the guardian kills the whole group", "guardian", true},
		{"parent-death signal kills a child forked inside Enter", "enter-netns", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), helperEnv+"="+tc.mode)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(stdout)
			var pids []int
			for len(pids) < 2 && sc.Scan() {
				pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
				if err != nil {
					t.Fatalf("helper printed %q", sc.Text())
				}
				pids = append(pids, pid)
			}
			if len(pids) < 2 {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("helper printed %d pids, want 2", len(pids))
			}
			grandchild, child := pids[0], pids[1]
			t.Cleanup(func() { _ = syscall.Kill(grandchild, syscall.SIGKILL) })
			if !alive(child) || !alive(grandchild) {
				t.Fatal("the helper's processes are not running")
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			waitGone(t, child)
			if tc.grandchildDies {
				waitGone(t, grandchild)
			} else if !alive(grandchild) {
				// Documents why the guardian exists: without it the
				// shell's own child is orphaned, not killed.
				t.Log("grandchild died without the guardian too")
			}
		})
	}
}

// TestAGuardianNeedsABinaryThatRunsIt pins the explicit opt-in: a binary
// that does not call RunReaperIfAsked would, re-executed, run its main
// (a test binary, its tests) instead of the guardian, so the Supervisor
// refuses to start one. Not parallel: it turns the opt-in off for a while.
func TestAGuardianNeedsABinaryThatRunsIt(t *testing.T) {
	reaperReady.Store(false)
	defer reaperReady.Store(true)
	s, err := NewSupervisor(Options{})
	if !errors.Is(err, ErrNoReaper) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("NewSupervisor = %v, want ErrNoReaper", err)
	}
	s, err = NewSupervisor(Options{NoGuardian: true})
	if err != nil {
		t.Fatalf("NewSupervisor without the guardian = %v, want it to start", err)
	}
	s.Close()
}

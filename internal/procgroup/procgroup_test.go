package procgroup

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startShell starts sh leading its own group with a background sleep in
// the group, and returns the sleep's pid once the shell printed it.
func startShell(t *testing.T, script string) (cmd *exec.Cmd, child int) {
	t.Helper()
	outR, outW, errR, errW, err := Pipes()
	if err != nil {
		t.Fatal(err)
	}
	cmd = &exec.Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", script}, Stdout: outW, Stderr: errW, SysProcAttr: Attr(true)}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	CloseAll(outW, errW)
	t.Cleanup(func() { CloseAll(outR, errR) })
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatalf("read the child's pid: %v", err)
	}
	child, err = strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("child pid %q: %v", line, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	return cmd, child
}

// gone reports whether pid has exited (no process, or a zombie left for
// whoever inherited it).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return runtime.GOOS == "linux" // vanished between the two looks
	}
	_, after, _ := strings.Cut(string(stat), ") ")
	return strings.HasPrefix(after, "Z")
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestKillReachesEveryProcessOfTheGroup(t *testing.T) {
	cmd, child := startShell(t, `sleep 600 & echo "$!"; wait`)
	Kill(cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	waitGone(t, child)
}

func TestAGroupIsSweptAfterItsLeaderExitsCleanly(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux can wait without reaping")
	}
	// The leader exits at once and leaves its background child behind.
	cmd, child := startShell(t, `sleep 600 & echo "$!"`)
	reaped, err := WaitExited(cmd)
	if reaped || err != nil {
		t.Fatalf("WaitExited = %v, %v; want the leader left unreaped", reaped, err)
	}
	if gone(child) {
		t.Fatal("the child died with its leader; the test proves nothing")
	}
	Kill(cmd.Process.Pid, syscall.SIGKILL)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("reap the leader: %v", err)
	}
	waitGone(t, child)
}

func TestFinishReadingStopsWaitingForAProcessThatLeftTheGroup(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer CloseAll(w)
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		_, _ = r.Read(make([]byte, 1)) // blocks: w is never written or closed here
	}()
	start := time.Now()
	FinishReading(&readers, 50*time.Millisecond, r)
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("FinishReading returned after %v, before the grace period", d)
	}
}

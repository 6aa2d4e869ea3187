package probe

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func execProbeOf(timeout int32, argv ...string) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:   corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: argv}},
		TimeoutSeconds: timeout,
	}
}

func TestExec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		argv    []string
		want    Result
		wantMsg string
	}{
		{"exit 0 succeeds", []string{"true"}, Success, ""},
		{"a non-zero exit fails with the output as message", []string{"sh", "-c", "echo not ready; exit 3"}, Failure, "not ready\n"},
		{"the output is stdout, then stderr", []string{"sh", "-c", "echo to-stderr >&2; echo to-stdout; exit 1"}, Failure, "to-stdout\nto-stderr\n"},
		{"argv runs without a shell", []string{"echo", "$HOME", "a  b", "*", "|", "x"}, Success, "$HOME a  b * | x\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := run(t, execProbeOf(5, tc.argv...), Target{})
			if o.Result != tc.want || o.Message != tc.wantMsg || o.Attempts != 1 {
				t.Errorf("got %v %q after %d attempts, want %v %q after 1", o.Result, o.Message, o.Attempts, tc.want, tc.wantMsg)
			}
		})
	}
}

func TestExecOutputIsCappedAtExactly10240Bytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script string
		want   string
	}{
		{"a long stdout is cut", "head -c 30000 /dev/zero | tr '\\0' a; exit 1", strings.Repeat("a", MaxExecOutput)},
		{"stderr fills what stdout leaves", "head -c 6000 /dev/zero | tr '\\0' a; head -c 6000 /dev/zero | tr '\\0' b >&2; exit 1",
			strings.Repeat("a", 6000) + strings.Repeat("b", MaxExecOutput-6000)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := run(t, execProbeOf(10, "sh", "-c", tc.script), Target{})
			if o.Result != Failure || o.Message != tc.want {
				t.Errorf("got %v with %d bytes of message, want failure with %d", o.Result, len(o.Message), len(tc.want))
			}
		})
	}
}

func TestExecExpandsStaticEnv(t *testing.T) {
	env := []corev1.EnvVar{
		{Name: "GREETING", Value: "first"},
		{Name: "GREETING", Value: "hello"}, // the last entry wins
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "EMPTY", Value: ""},
	}
	vars := map[string]string{"GREETING": "hello", "POD_IP": "", "EMPTY": ""}
	tests := []struct{ name, in, want string }{
		{"$(VAR) is replaced", "$(GREETING)", "hello"},
		{"$(VAR) inside text", "say-$(GREETING)-now", "say-hello-now"},
		{"$$ escapes a reference", "$$(GREETING)", "$(GREETING)"},
		{"$$$ is an escape then a bare $", "$$$(GREETING)", "$hello"},
		{"an unknown variable stays as written", "$(MISSING)", "$(MISSING)"},
		{"a valueFrom variable expands to its empty static value", "[$(POD_IP)]", "[]"},
		{"an unclosed reference stays as written", "$(GREETING", "$(GREETING"},
		{"a $ before anything else stays", "$GREETING and $", "$GREETING and $"},
		{"an empty name is unknown", "$()", "$()"},
		{"references are not nested", "$(A$(GREETING))", "$(A$(GREETING))"},
		{"values are not expanded again", "$(EMPTY)$(GREETING)", "hello"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := expandVars(tc.in, vars); got != tc.want {
				t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}

	t.Run("the probe runs the expanded argv", func(t *testing.T) {
		o := run(t, execProbeOf(5, "echo", "$(GREETING)", "$$(GREETING)", "$(MISSING)", "[$(POD_IP)]"), Target{Env: env})
		if want := "hello $(GREETING) $(MISSING) []\n"; o.Result != Success || o.Message != want {
			t.Errorf("got %v %q, want success %q", o.Result, o.Message, want)
		}
	})
}

func TestExecTimeoutIsAFailureWithTheKubeletsText(t *testing.T) {
	t.Parallel()
	o := run(t, execProbeOf(1, "sleep", "5"), Target{})
	if want := `command timed out: "sleep 5" timed out after 1s`; o.Result != Failure || o.Message != want || o.Attempts != 1 {
		t.Errorf("got %v %q after %d attempts, want failure %q after 1", o.Result, o.Message, o.Attempts, want)
	}
}

func TestExecThatCannotStartIsAnError(t *testing.T) {
	tests := []struct{ name, cmd, wantErr string }{
		{"a missing program on PATH", "podgate-no-such-command", `exec: "podgate-no-such-command": executable file not found in $PATH`},
		{"a missing path", "/nonexistent/podgate-check", "no such file or directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := run(t, execProbeOf(1, tc.cmd), Target{})
			if o.Result != Error || o.Attempts != MaxAttempts || o.Err == nil || !strings.Contains(o.Err.Error(), tc.wantErr) {
				t.Errorf("got %v (err %v) after %d attempts, want error %q after %d", o.Result, o.Err, o.Attempts, tc.wantErr, MaxAttempts)
			}
		})
	}
}

func TestHostExecutorContext(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "podgate-check")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"checked in $(pwd) with X=$X\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tg := Target{Exec: HostExecutor{Dir: dir, Env: []string{"PATH=" + dir + ":/usr/bin:/bin", "X=1"}}}
	o := run(t, execProbeOf(5, "podgate-check"), tg)
	want := "checked in " + dir + " with X=1\n"
	if o.Result != Success || o.Message != want {
		t.Errorf("got %v %q, want success %q (argv[0] found on Env's PATH, run in Dir with Env)", o.Result, o.Message, want)
	}
}

// The whole process group dies, not just the command the kubelet would
// have started: a grandchild holding on is found and checked.
func TestHostExecutorKillsTheWholeProcessGroup(t *testing.T) {
	t.Parallel()
	// The shell starts a grandchild, records its pid, then waits in a child
	// of its own; argv is a real /bin/sh.
	probeFor := func(pidFile string, timeout int32, tail string) *corev1.Probe {
		return execProbeOf(timeout, "/bin/sh", "-c", "sleep 30 & echo $! > "+pidFile+".tmp; mv "+pidFile+".tmp "+pidFile+"; "+tail)
	}

	t.Run("on timeout", func(t *testing.T) {
		t.Parallel()
		pidFile := filepath.Join(t.TempDir(), "pid")
		// On a loaded machine the shell may not get to start its grandchild
		// within the timeout; then there is nothing to check, so try again.
		for try := 1; ; try++ {
			o := run(t, probeFor(pidFile, 2, "sleep 30"), Target{})
			if o.Result != Failure || !strings.HasPrefix(o.Message, "command timed out:") {
				t.Fatalf("got %v %q, want a timeout failure", o.Result, o.Message)
			}
			if _, err := os.Stat(pidFile); err == nil || try == 5 {
				break
			}
		}
		waitGone(t, readPid(t, pidFile))
	})

	t.Run("when the worker stops", func(t *testing.T) {
		t.Parallel()
		pidFile := filepath.Join(t.TempDir(), "pid")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			// Stop the worker once the grandchild exists.
			for ctx.Err() == nil {
				if _, err := os.Stat(pidFile); err == nil {
					cancel()
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		o := runner.Run(ctx, probeFor(pidFile, 60, "sleep 30"), Target{})
		if o.Result != Error || !errors.Is(o.Err, context.Canceled) || o.Attempts != 1 {
			t.Fatalf("got %v (err %v) after %d attempts, want a discarded error after 1", o.Result, o.Err, o.Attempts)
		}
		waitGone(t, readPid(t, pidFile))
	})

	t.Run("when the command exits, leaving it in the background", func(t *testing.T) {
		t.Parallel()
		pidFile := filepath.Join(t.TempDir(), "pid")
		// If the executor waited for the grandchild (it holds stdout), the
		// probe would time out instead of succeeding.
		o := run(t, probeFor(pidFile, 10, "exit 0"), Target{})
		if o.Result != Success {
			t.Fatalf("got %v %q, want success", o.Result, o.Message)
		}
		waitGone(t, readPid(t, pidFile))
	})
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the probe command did not record its grandchild: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitGone polls until pid no longer runs (gone, or a zombie waiting for
// init to reap it). SIGKILL is delivered asynchronously, hence the poll.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i+1:]), " Z") {
				return
			}
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL) // don't leave it behind
			t.Fatalf("grandchild %d still runs 10s after the probe ended", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

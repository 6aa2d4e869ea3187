package testapp_test

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildBinary builds cmd/podgate-testapp, the real binary a pod would run.
func buildBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is needed to build the binary under test: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "podgate-testapp")
	out, err := exec.Command(goTool, "build", "-o", bin, "github.com/podgate/podgate/cmd/podgate-testapp").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// proc is a running test app binary whose stderr (the logs) is collected.
type proc struct {
	cmd      *exec.Cmd
	mu       sync.Mutex
	stderr   strings.Builder
	readDone chan struct{}
	waitOnce sync.Once
	waitErr  error
}

// cleanEnv drops the variables the app reads, so the host's values do not
// leak into a test.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "PORT" && k != "POD_IP" && k != "HOSTNAME" {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

func startProc(t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), readDone: make(chan struct{})}
	p.cmd.Env = env
	pipe, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() {
		defer close(p.readDone)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, pipe)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill() // no-op once it exited
		p.wait()
	})
	return p
}

func (p *proc) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// wait reaps the process after its stderr is fully read, as exec requires.
func (p *proc) wait() error {
	p.waitOnce.Do(func() {
		<-p.readDone
		p.waitErr = p.cmd.Wait()
	})
	return p.waitErr
}

// exitCode waits for the process to exit and returns its exit code, or -1
// when a signal killed it.
func (p *proc) exitCode(t *testing.T) int {
	t.Helper()
	done := make(chan struct{})
	go func() { p.wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatalf("process did not exit within %s; logs:\n%s", waitTimeout, p.logs())
	}
	var ee *exec.ExitError
	if err := p.wait(); errors.As(err, &ee) {
		return ee.ExitCode()
	} else if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return p.cmd.ProcessState.ExitCode()
}

var (
	listeningRe = regexp.MustCompile(`msg=listening .*\baddr=(\S+)`)
	grpcAddrRe  = regexp.MustCompile(`msg=listening .*\bgrpcAddr=(\S+)`)
)

// addr waits for the app's "listening" log line and returns the bound address.
func (p *proc) addr(t *testing.T) string {
	t.Helper()
	return listeningAddr(t, p.logs)
}

// listeningAddr waits for the "listening" line in logs and returns the
// address it names.
func listeningAddr(t *testing.T, logs func() string) string {
	t.Helper()
	var addr string
	eventually(t, "the listening log line", func() bool {
		if m := listeningRe.FindStringSubmatch(logs()); m != nil {
			addr = m[1]
			return true
		}
		return false
	})
	return addr
}

func (p *proc) waitLog(t *testing.T, line string) {
	t.Helper()
	eventually(t, "log line "+line, func() bool { return strings.Contains(p.logs(), line) })
}

func TestBinary(t *testing.T) {
	bin := buildBinary(t)

	t.Run("SIGTERM with --sleep-on-term keeps serving for it, then exits 0", func(t *testing.T) {
		const sleep = 3 * time.Second
		p := startProc(t, bin, cleanEnv(), "--port", "0", "--name", "web", "--sleep-on-term", sleep.String())
		addr := p.addr(t)
		if got := get(t, "http://"+addr+"/"); got.body != "web\n" {
			t.Fatalf("GET / = %d %q, want 200 \"web\\n\"", got.code, got.body)
		}
		signalled := time.Now()
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		p.waitLog(t, "termination requested: serving on for sleep-on-term")
		for _, path := range []string{"/", "/readyz"} {
			if got := get(t, "http://"+addr+path); got.code != 200 {
				t.Errorf("GET %s during sleep-on-term = %d %q, want 200", path, got.code, got.body)
			}
		}
		if code := p.exitCode(t); code != 0 {
			t.Errorf("exit code = %d, want 0; logs:\n%s", code, p.logs())
		}
		// A lower bound only: the app cannot exit before it slept.
		if took := time.Since(signalled); took < sleep {
			t.Errorf("exited %s after SIGTERM, before --sleep-on-term %s", took, sleep)
		}
		if !refused(addr) {
			t.Errorf("%s still accepts connections after exit", addr)
		}
	})

	for _, sig := range []struct {
		name string
		sig  syscall.Signal
	}{{"SIGTERM", syscall.SIGTERM}, {"SIGINT", syscall.SIGINT}} {
		t.Run(sig.name+" without --sleep-on-term exits 0 and closes its listeners", func(t *testing.T) {
			p := startProc(t, bin, cleanEnv(), "--port", "0", "--grpc-port", "0")
			addr := p.addr(t)
			m := grpcAddrRe.FindStringSubmatch(p.logs())
			if m == nil {
				t.Fatalf("no grpcAddr in the listening line:\n%s", p.logs())
			}
			grpcAddr := m[1]
			expectCode(t, "http://"+addr+"/healthz", 200)
			checkAll(t, healthClient(t, grpcAddr), want{"": serving})
			if err := p.cmd.Process.Signal(sig.sig); err != nil {
				t.Fatal(err)
			}
			if code := p.exitCode(t); code != 0 {
				t.Errorf("exit code = %d, want 0; logs:\n%s", code, p.logs())
			}
			if !strings.Contains(p.logs(), "msg=\"shut down\"") {
				t.Errorf("logs lack the clean shutdown line:\n%s", p.logs())
			}
			for _, a := range []string{addr, grpcAddr} {
				if !refused(a) {
					t.Errorf("%s still accepts connections after exit", a)
				}
			}
		})
	}

	t.Run("$PORT and $POD_IP choose where it listens", func(t *testing.T) {
		p := startProc(t, bin, cleanEnv("PORT=0", "POD_IP=127.0.0.2", "HOSTNAME=pod-a"))
		addr := p.addr(t)
		if !strings.HasPrefix(addr, "127.0.0.2:") {
			t.Errorf("listening on %s, want 127.0.0.2:*", addr)
		}
		if got := get(t, "http://"+addr+"/"); got.body != "pod-a\n" {
			t.Errorf("GET / body = %q, want the $HOSTNAME %q", got.body, "pod-a\n")
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		if code := p.exitCode(t); code != 0 {
			t.Errorf("exit code = %d, want 0", code)
		}
	})

	t.Run("exec probe file exists while running and toggles", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "healthy")
		p := startProc(t, bin, cleanEnv(), "--port", "0", "--exec-file", file)
		addr := p.addr(t)
		// What an exec probe runs: cat the file.
		if out, err := exec.Command("cat", file).CombinedOutput(); err != nil {
			t.Errorf("cat %s: %v %s; want it to pass at start", file, err, out)
		}
		expectCode(t, "http://"+addr+"/toggleExec", 200)
		if err := exec.Command("cat", file).Run(); err == nil {
			t.Errorf("cat %s passed after /toggleExec removed it", file)
		}
		expectCode(t, "http://"+addr+"/toggleExec", 200)
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		if code := p.exitCode(t); code != 0 {
			t.Errorf("exit code = %d, want 0", code)
		}
		// Toggle files do not pile up in a shared /tmp.
		if _, err := os.Stat(file); err == nil {
			t.Errorf("%s is left behind after the app exited", file)
		}
	})

	t.Run("command lines it refuses or answers at once", func(t *testing.T) { checkExitCodes(t, bin) })
}

// checkExitCodes runs the program bin (after prefix, e.g. a test binary's
// "testapp") with command lines that end it at once, and checks its exit
// code and what it says on stderr.
func checkExitCodes(t *testing.T, bin string, prefix ...string) {
	for _, tc := range []struct {
		name     string
		env      []string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no port is a usage error (exit 2)", nil, nil, 2, "pass --port or set $PORT"},
		{"an unknown flag is a usage error (exit 2)", nil, []string{"--bogus"}, 2, "bogus"},
		{"a stray argument is a usage error (exit 2)", nil, []string{"--port", "0", "extra"}, 2, "unexpected arguments"},
		{"a bad $POD_IP is a usage error (exit 2)", []string{"PORT=0", "POD_IP=nope"}, nil, 2, "$POD_IP"},
		{"an exec file in a missing directory fails (exit 1)", nil,
			[]string{"--port", "0", "--exec-file", "/nonexistent-podgate-dir/healthy"}, 1, "exec file"},
		{"--help exits 0 and lists the endpoints", nil, []string{"--help"}, 0, "/toggleReady"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startProc(t, bin, cleanEnv(tc.env...), slices.Concat(prefix, tc.args)...)
			if code := p.exitCode(t); code != tc.wantCode {
				t.Errorf("exit code = %d, want %d; stderr:\n%s", code, tc.wantCode, p.logs())
			}
			if !strings.Contains(p.logs(), tc.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantErr, p.logs())
			}
		})
	}
}

func expectCode(t *testing.T, url string, want int) {
	t.Helper()
	if got := get(t, url); got.code != want {
		t.Errorf("GET %s = %d %q, want %d", url, got.code, got.body, want)
	}
}

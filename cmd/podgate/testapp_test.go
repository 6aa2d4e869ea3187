package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Helpers here carry a testapp prefix: the package's other test files
// belong to other subcommands.

const testappWait = 30 * time.Second

var errTestappTimeout = errors.New("podgate testapp did not exit in time")

func TestTestappUsageErrors(t *testing.T) {
	t.Setenv("PORT", "")
	t.Setenv("POD_IP", "")
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no port is a usage error", nil, "no HTTP port: pass --port or set $PORT"},
		{"a non-numeric port is a usage error", []string{"--port", "web"}, `invalid --port "web"`},
		{"a negative duration is a usage error", []string{"--port", "0", "--ready-after", "-1s"}, "invalid --ready-after -1s"},
		{"a malformed duration is a usage error", []string{"--port", "0", "--sleep-on-term", "soon"}, "sleep-on-term"},
		{"a positional argument is a usage error", []string{"--port", "0", "extra"}, "extra"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"testapp"}, tc.args...), &stdout, &stderr)
			if code != exitUsage {
				t.Errorf("exit code = %d, want %d; stderr:\n%s", code, exitUsage, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tc.wantErr)
			}
		})
	}
}

func TestTestappHelpListsEndpoints(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"testapp", "--help"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit code = %d, want 0", code)
	}
	for _, want := range []string{"/toggleReady", "/toggleExec", "--sleep-on-term", "--exec-file", "--grpc-port", "$PORT"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, stdout.String())
		}
	}
}

// TestTestappBinary runs the real `podgate testapp` and terminates it.
func TestTestappBinary(t *testing.T) {
	bin := podgateBinary(t)

	t.Run("serves its name and exits 0 on SIGTERM", func(t *testing.T) {
		addr, logs, wait := testappStart(t, bin, "testapp", "--port", "0", "--name", "web")
		resp, err := (&http.Client{Timeout: testappWait, Transport: &http.Transport{DisableKeepAlives: true}}).Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "web\n" {
			t.Errorf("GET / = %d %q, want 200 %q", resp.StatusCode, body, "web\n")
		}
		if err := wait(syscall.SIGTERM); err != nil {
			t.Errorf("after SIGTERM: %v; logs:\n%s", err, logs())
		}
	})

	t.Run("a taken port exits 1", func(t *testing.T) {
		addr, _, wait := testappStart(t, bin, "testapp", "--port", "0")
		_, port, _ := strings.Cut(addr, ":")
		cmd := exec.Command(bin, "testapp", "--port", port)
		cmd.Env = testappEnv()
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !(errors.As(err, &ee) && ee.ExitCode() == exitInvalid) {
			t.Errorf("second app on port %s: %v, want exit %d; output:\n%s", port, err, exitInvalid, out)
		}
		if !strings.Contains(string(out), "address already in use") {
			t.Errorf("output should say the address is in use:\n%s", out)
		}
		if err := wait(syscall.SIGTERM); err != nil {
			t.Error(err)
		}
	})
}

func testappEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "PORT" && k != "POD_IP" && k != "HOSTNAME" {
			env = append(env, kv)
		}
	}
	return env
}

var testappListening = regexp.MustCompile(`msg=listening .*\baddr=(\S+)`)

// testappStart starts bin, waits for its listening line and returns the
// address, its logs so far, and a func that signals it and waits for a
// clean exit (nil error means exit code 0).
func testappStart(t *testing.T, bin string, args ...string) (string, func() string, func(os.Signal) error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = testappEnv()
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var buf strings.Builder
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			mu.Lock()
			buf.WriteString(sc.Text() + "\n")
			mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, pipe)
	}()
	logs := func() string { mu.Lock(); defer mu.Unlock(); return buf.String() }
	var once sync.Once
	var waitErr error
	reap := func() error {
		once.Do(func() { <-readDone; waitErr = cmd.Wait() })
		return waitErr
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = reap() })

	var addr string
	for deadline := time.Now().Add(testappWait); ; time.Sleep(5 * time.Millisecond) {
		if m := testappListening.FindStringSubmatch(logs()); m != nil {
			addr = m[1]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no listening line within %s; logs:\n%s", testappWait, logs())
		}
	}
	stop := func(sig os.Signal) error {
		if err := cmd.Process.Signal(sig); err != nil {
			return err
		}
		done := make(chan error, 1)
		go func() { done <- reap() }()
		select {
		case err := <-done:
			return err
		case <-time.After(testappWait):
			return errTestappTimeout
		}
	}
	return addr, logs, stop
}

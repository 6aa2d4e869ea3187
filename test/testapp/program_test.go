package testapp_test

import (
	"context"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/podgate/podgate/test/syncbuf"
)

// TestMainAsTheTestBinarysProgram runs testapp.Main the way the other
// packages' test binaries run it for their pods: this test binary with
// "testapp" first (see TestMain), a real process on a free port.
func TestMainAsTheTestBinarysProgram(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("serves until SIGTERM, then exits 0 and closes its port", func(t *testing.T) {
		p := startProc(t, self, cleanEnv(), "testapp", "--port", "0", "--name", "from-main")
		addr := p.addr(t)
		if got := get(t, "http://"+addr+"/"); got.code != 200 || got.body != "from-main\n" {
			t.Fatalf("GET / = %d %q, want 200 %q", got.code, got.body, "from-main\n")
		}
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := p.exitCode(t); code != 0 {
			t.Errorf("exit code = %d, want 0; logs:\n%s", code, p.logs())
		}
		if !strings.Contains(p.logs(), `msg="shut down"`) {
			t.Errorf("logs lack the clean shutdown line:\n%s", p.logs())
		}
		if !refused(addr) {
			t.Errorf("%s still accepts connections after exit", addr)
		}
	})

	t.Run("command lines it refuses or answers at once", func(t *testing.T) { checkExitCodes(t, self, "testapp") })
}

// TestFlagsMainExitCodes runs Flags.Main in this process, as `podgate
// testapp` does after cobra parsed its flags: a run ends with its context.
func TestFlagsMainExitCodes(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, takenPort, _ := net.SplitHostPort(taken.Addr().String())
	noEnv := envOf(nil)

	t.Run("a run stopped by its context exits 0", func(t *testing.T) {
		var stderr syncbuf.Buffer
		f := parseFlags(t, []string{"--port", "0", "--name", "in-process"})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		code := make(chan int, 1)
		go func() { code <- f.Main(ctx, noEnv, &stderr) }()
		addr := listeningAddr(t, stderr.String)
		if got := get(t, "http://"+addr+"/"); got.body != "in-process\n" {
			t.Errorf("GET / = %d %q, want %q", got.code, got.body, "in-process\n")
		}
		cancel()
		if c := <-code; c != 0 {
			t.Errorf("exit code = %d, want 0; stderr:\n%s", c, stderr.String())
		}
		if !refused(addr) {
			t.Errorf("%s still accepts connections after Main returned", addr)
		}
	})

	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no port exits 2", nil, 2, "Error: no HTTP port: pass --port or set $PORT"},
		{"a negative duration exits 2", []string{"--port", "0", "--ready-after", "-1s"}, 2, "Error: invalid --ready-after -1s"},
		{"a taken port exits 1", []string{"--port", takenPort}, 1, "address already in use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr syncbuf.Buffer
			f := parseFlags(t, tc.args)
			if code := f.Main(context.Background(), noEnv, &stderr); code != tc.wantCode {
				t.Errorf("exit code = %d, want %d; stderr:\n%s", code, tc.wantCode, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantErr, stderr.String())
			}
		})
	}
}

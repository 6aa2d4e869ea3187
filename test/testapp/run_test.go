package testapp_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podgate/podgate/test/testapp"
)

// refused reports whether a TCP connect to addr is refused, i.e. the
// listener is closed.
func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, waitTimeout)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

func TestServeUntilSleepOnTerm(t *testing.T) {
	const sleep = 30 * time.Second
	fc := newFakeClock()
	s, logs := startApp(t, testapp.Config{Name: "web", SleepOnTerm: sleep, GRPCAddr: "127.0.0.1:0", Clock: fc})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeUntil(ctx) }()

	cancel()
	// The sleep timer is the only waiter on the clock (no ready-after, no
	// fail-live-after), so its appearance means ServeUntil is sleeping.
	eventually(t, "the sleep-on-term timer", fc.HasWaiters)

	t.Run("keeps serving traffic and probes during sleep-on-term", func(t *testing.T) {
		expect(t, s, "GET", "/", 200, "web")
		expect(t, s, "GET", "/readyz", 200, "")
		checkAll(t, healthClient(t, s.GRPCAddr()), want{"": serving})
		select {
		case err := <-done:
			t.Fatalf("ServeUntil returned %v before sleep-on-term elapsed", err)
		default:
		}
	})

	fc.Step(sleep - time.Millisecond)
	expect(t, s, "GET", "/", 200, "web")
	fc.Step(time.Millisecond)

	t.Run("returns nil and closes its listeners once sleep-on-term elapsed", func(t *testing.T) {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("ServeUntil = %v, want nil", err)
			}
		case <-time.After(waitTimeout):
			t.Fatal("ServeUntil did not return after sleep-on-term elapsed")
		}
		for _, addr := range []string{s.Addr(), s.GRPCAddr()} {
			if !refused(addr) {
				t.Errorf("%s still accepts connections after shutdown", addr)
			}
		}
		for _, line := range []string{"termination requested: serving on for sleep-on-term", "shut down"} {
			if !strings.Contains(logs.String(), line) {
				t.Errorf("logs lack %q:\n%s", line, logs)
			}
		}
	})
}

func TestRunWithoutSleepOnTermExitsAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // terminate before it even starts: Run must still start and stop cleanly
	if err := testapp.Run(ctx, testapp.Config{GRPCAddr: "127.0.0.1:0"}, nil); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

func TestServeUntilClosesListeners(t *testing.T) {
	s, _ := startApp(t, testapp.Config{GRPCAddr: "127.0.0.1:0"})
	expect(t, s, "GET", "/", 200, "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.ServeUntil(ctx); err != nil {
		t.Fatalf("ServeUntil = %v, want nil", err)
	}
	for _, addr := range []string{s.Addr(), s.GRPCAddr()} {
		if !refused(addr) {
			t.Errorf("%s still accepts connections after ServeUntil returned", addr)
		}
	}
}

func TestRestartStartsLiveAndReady(t *testing.T) {
	path := filepath.Join(t.TempDir(), "healthy")
	cfg := testapp.Config{ExecFile: path, GRPCAddr: "127.0.0.1:0"}
	first, err := testapp.Start(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, first, "GET", "/toggleReady", 200, "false")
	expect(t, first, "GET", "/toggleLive", 200, "false")
	expect(t, first, "GET", "/toggleExec", 200, "false")
	if err := first.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	second, _ := startApp(t, cfg)
	expect(t, second, "GET", "/readyz", 200, "")
	expect(t, second, "GET", "/healthz", 200, "")
	expect(t, second, "GET", "/livez", 200, "")
	checkAll(t, healthClient(t, second.GRPCAddr()), want{"": serving, testapp.GRPCServiceLiveness: serving})
	if !fileExists(path) {
		t.Error("exec file missing after restart")
	}
}

func TestStartErrors(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct {
		name    string
		cfg     testapp.Config
		wantErr string
	}{
		{"a taken HTTP port fails Start", testapp.Config{Addr: taken.Addr().String()}, "listen for HTTP"},
		{"a taken gRPC port fails Start", testapp.Config{GRPCAddr: taken.Addr().String()}, "listen for gRPC"},
		{"a negative ready-after fails Start", testapp.Config{ReadyAfter: -time.Second}, "ReadyAfter must not be negative"},
		{"a negative fail-live-after fails Start", testapp.Config{FailLiveAfter: -time.Second}, "FailLiveAfter must not be negative"},
		{"a negative sleep-on-term fails Start", testapp.Config{SleepOnTerm: -time.Second}, "SleepOnTerm must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := testapp.Start(tc.cfg, nil)
			if err == nil {
				_ = s.Shutdown(context.Background())
				t.Fatalf("Start succeeded, want an error containing %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Start error = %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestRunReturnsStartError(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	err = testapp.Run(context.Background(), testapp.Config{Addr: taken.Addr().String()}, nil)
	if err == nil || !strings.Contains(err.Error(), taken.Addr().String()) {
		t.Errorf("Run on a taken port = %v, want an error naming %s", err, taken.Addr())
	}
}

func TestShutdownIsIdempotent(t *testing.T) {
	s, err := testapp.Start(testapp.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := s.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown #%d = %v, want nil", i+1, err)
		}
	}
}

package hooks

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/probe"
)

// hookServer answers hooks on loopback with code and hands over each
// request it saw.
func hookServer(t *testing.T, code int) (port int, seen <-chan *http.Request) {
	t.Helper()
	ch := make(chan *http.Request, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ch <- r.Clone(context.Background())
		w.WriteHeader(code)
	}))
	t.Cleanup(srv.Close)
	_, p, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	port, _ = strconv.Atoi(p)
	return port, ch
}

func TestHTTPGetHooks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		code    int
		port    func(port int) intstr.IntOrString
		wantErr string
	}{
		{"a named port, the path with its query and the headers reach the pod IP", http.StatusOK,
			func(int) intstr.IntOrString { return intstr.FromString("admin") }, ""},
		{"a port by number works too", http.StatusNoContent, intstr.FromInt, ""},
		{"a redirect counts as success", http.StatusFound, intstr.FromInt, ""},
		{"an error status fails naming it", http.StatusInternalServerError, intstr.FromInt, "HTTP 500"},
		{"an unknown port name fails naming it", http.StatusOK,
			func(int) intstr.IntOrString { return intstr.FromString("nope") }, `no container port named "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			port, seen := hookServer(t, tc.code)
			target := probe.Target{PodIP: "127.0.0.1", Ports: []corev1.ContainerPort{{Name: "admin", ContainerPort: int32(port)}}}
			h := &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: "drain?after=1", Port: tc.port(port),
				HTTPHeaders: []corev1.HTTPHeader{{Name: "Host", Value: "app.example"}, {Name: "X-Hook", Value: "preStop"}},
			}}
			err := Run(context.Background(), h, target, clock.RealClock{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := <-seen
			if r.URL.Path != "/drain" || r.URL.RawQuery != "after=1" || r.Host != "app.example" || r.Header.Get("X-Hook") != "preStop" {
				t.Errorf("hook request: path %q query %q host %q X-Hook %q", r.URL.Path, r.URL.RawQuery, r.Host, r.Header.Get("X-Hook"))
			}
		})
	}
}

func TestExecHooks(t *testing.T) {
	t.Parallel()
	env := []corev1.EnvVar{{Name: "MSG", Value: "first"}, {Name: "MSG", Value: "static"}}
	for _, tc := range []struct {
		name    string
		command []string
		wantErr string
	}{
		{"a zero exit is success", []string{"/bin/sh", "-c", "exit 0"}, ""},
		{"a non-zero exit fails with the code and the output, $(VAR) expanded from the last static value",
			[]string{"/bin/sh", "-c", "echo '$(MSG)' '$(UNSET)'; exit 3"}, "exit code 3: static $(UNSET)"},
		{"a command that cannot start fails", []string{"/nonexistent/hook"}, "/nonexistent/hook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: tc.command}}
			err := Run(context.Background(), h, probe.Target{Env: env}, clock.RealClock{})
			if tc.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestSleepHookEndsOnTheClockOrTheContext(t *testing.T) {
	t.Parallel()
	h := &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}
	run := func(ctx context.Context, clk clock.Clock) <-chan error {
		done := make(chan error, 1)
		go func() { done <- Run(ctx, h, probe.Target{}, clk) }()
		return done
	}
	t.Run("the time is up", func(t *testing.T) {
		fc := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		done := run(context.Background(), fc)
		deadline := time.Now().Add(30 * time.Second)
		for !fc.HasWaiters() {
			if time.Now().After(deadline) {
				t.Fatal("the sleep hook never set a timer")
			}
			time.Sleep(time.Millisecond)
		}
		fc.Step(5*time.Second - time.Millisecond)
		select {
		case err := <-done:
			t.Fatalf("ended %v before its 5 s", err)
		case <-time.After(50 * time.Millisecond):
		}
		fc.Step(time.Millisecond)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the context ends first", func(t *testing.T) {
		fc := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		ctx, cancel := context.WithCancel(context.Background())
		done := run(ctx, fc)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func TestTCPSocketHooksAreIgnored(t *testing.T) {
	t.Parallel()
	h := &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(1)}}
	if err := Run(context.Background(), h, probe.Target{PodIP: "127.0.0.1"}, clock.RealClock{}); err != nil {
		t.Fatalf("a tcpSocket hook = %v, want nothing done", err)
	}
}

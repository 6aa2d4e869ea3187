package probe

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/gate/contract"
)

func grpcProbeOf(port int, service *string) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:   corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: int32(port), Service: service}},
		TimeoutSeconds: testTimeout,
	}
}

// startGRPC serves on addr ("127.0.0.1:0" or "[::1]:0") with the given
// services registered and returns the port.
func startGRPC(t *testing.T, addr string, register func(*grpc.Server), opts ...grpc.ServerOption) int {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	s := grpc.NewServer(opts...)
	register(s)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(l) }()
	t.Cleanup(func() { s.Stop(); <-done })
	return l.Addr().(*net.TCPAddr).Port
}

// stuckHealth answers Check only when the caller gives up.
type stuckHealth struct {
	healthpb.UnimplementedHealthServer
}

func (stuckHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestGRPC(t *testing.T) {
	t.Parallel()
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("serving", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("not-serving", healthpb.HealthCheckResponse_NOT_SERVING)
	hs.SetServingStatus("unknown", healthpb.HealthCheckResponse_UNKNOWN)

	var mu sync.Mutex
	var userAgent []string
	recordUA := grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		mu.Lock()
		userAgent = md.Get("user-agent")
		mu.Unlock()
		return h(ctx, req)
	})
	port := startGRPC(t, "127.0.0.1:0", func(s *grpc.Server) { healthpb.RegisterHealthServer(s, hs) }, recordUA)
	bare := startGRPC(t, "127.0.0.1:0", func(*grpc.Server) {})
	stuck := startGRPC(t, "127.0.0.1:0", func(s *grpc.Server) { healthpb.RegisterHealthServer(s, stuckHealth{}) })
	refused := freePort(t)
	svc := func(s string) *string { return &s }

	tests := []struct {
		name    string
		probe   *corev1.Probe
		want    Result
		wantMsg string
	}{
		{"SERVING succeeds; no service means \"\"", grpcProbeOf(port, nil), Success, ""},
		{"a named SERVING service succeeds", grpcProbeOf(port, svc("serving")), Success, ""},
		{"NOT_SERVING is a failure", grpcProbeOf(port, svc("not-serving")), Failure, `service unhealthy (responded with "NOT_SERVING")`},
		{"UNKNOWN is a failure", grpcProbeOf(port, svc("unknown")), Failure, `service unhealthy (responded with "UNKNOWN")`},
		{"an unregistered service (NotFound) is a failure", grpcProbeOf(port, svc("nope")), Failure,
			"error: health rpc probe failed: rpc error: code = NotFound desc = unknown service"},
		{"a server without the health service (Unimplemented) is a failure", grpcProbeOf(bare, nil), Failure,
			"error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service grpc.health.v1.Health"},
		{"a Check past the deadline is a failure", withTimeout(grpcProbeOf(stuck, nil), 1), Failure,
			"timeout: health rpc did not complete within 1s"},
		{"a refused port waits the whole timeout, then fails", withTimeout(grpcProbeOf(refused, nil), 1), Failure,
			fmt.Sprintf(`timeout: failed to connect service "127.0.0.1:%d" within 1s: context deadline exceeded`, refused)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := run(t, tc.probe, Target{PodIP: "127.0.0.1"})
			if o.Result != tc.want || o.Message != tc.wantMsg || o.Attempts != 1 {
				t.Errorf("got %v %q after %d attempts, want %v %q after 1", o.Result, o.Message, o.Attempts, tc.want, tc.wantMsg)
			}
		})
	}

	t.Run("timeoutSeconds 0 counts as 1s", func(t *testing.T) {
		t.Parallel()
		p := grpcProbeOf(refused, nil)
		p.TimeoutSeconds = 0
		o := run(t, p, Target{PodIP: "127.0.0.1"})
		want := fmt.Sprintf(`timeout: failed to connect service "127.0.0.1:%d" within 1s: context deadline exceeded`, refused)
		if o.Result != Failure || o.Message != want {
			t.Errorf("got %v %q, want failure %q", o.Result, o.Message, want)
		}
	})

	t.Run("the User-Agent is kube-probe/<major.minor> grpc-go/<version>", func(t *testing.T) {
		if o := run(t, grpcProbeOf(port, nil), Target{PodIP: "127.0.0.1"}); o.Result != Success {
			t.Fatalf("got %v %q", o.Result, o.Message)
		}
		mu.Lock()
		defer mu.Unlock()
		want := "kube-probe/" + contract.KubeletVersion + " grpc-go/" + grpc.Version
		if len(userAgent) != 1 || userAgent[0] != want {
			t.Errorf("user-agent = %q, want %q", userAgent, want)
		}
	})

	t.Run("an IPv6 pod IP is bracketed", func(t *testing.T) {
		p6 := startGRPC(t, "[::1]:0", func(s *grpc.Server) { healthpb.RegisterHealthServer(s, hs) })
		if o := run(t, grpcProbeOf(p6, nil), Target{PodIP: "::1"}); o.Result != Success {
			t.Errorf("got %v %q, want success", o.Result, o.Message)
		}
	})
}

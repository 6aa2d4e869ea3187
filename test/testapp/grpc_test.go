package testapp_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/test/testapp"
)

const (
	serving    = healthpb.HealthCheckResponse_SERVING
	notServing = healthpb.HealthCheckResponse_NOT_SERVING
)

func healthClient(t *testing.T, addr string) healthpb.HealthClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("grpc.NewClient(%s): %v", addr, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return healthpb.NewHealthClient(conn)
}

func check(t *testing.T, c healthpb.HealthClient, service string) (healthpb.HealthCheckResponse_ServingStatus, codes.Code) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	resp, err := c.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return healthpb.HealthCheckResponse_UNKNOWN, status.Code(err)
	}
	return resp.GetStatus(), codes.OK
}

// want is the expected answer per gRPC health service.
type want map[string]healthpb.HealthCheckResponse_ServingStatus

func checkAll(t *testing.T, c healthpb.HealthClient, w want) {
	t.Helper()
	for svc, ws := range w {
		got, code := check(t, c, svc)
		if code != codes.OK || got != ws {
			t.Errorf("Check(%q) = %s (code %s), want %s", svc, got, code, ws)
		}
	}
}

func TestGRPCHealth(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    testapp.Config
		act    func(s *testapp.Server, fc *testingclock.FakeClock)
		expect want
	}{
		{"a started app is SERVING on every service", testapp.Config{}, nil,
			want{"": serving, testapp.GRPCServiceReadiness: serving, testapp.GRPCServiceLiveness: serving}},
		{"the ready toggle makes the overall status NOT_SERVING", testapp.Config{},
			func(s *testapp.Server, _ *testingclock.FakeClock) { s.SetReady(false) },
			want{"": notServing, testapp.GRPCServiceReadiness: notServing, testapp.GRPCServiceLiveness: serving}},
		{"the live toggle fails the liveness service only", testapp.Config{},
			func(s *testapp.Server, _ *testingclock.FakeClock) { s.SetLive(false) },
			want{"": serving, testapp.GRPCServiceLiveness: notServing}},
		{"NOT_SERVING until ready-after elapsed", testapp.Config{ReadyAfter: 5 * time.Second}, nil,
			want{"": notServing, testapp.GRPCServiceLiveness: serving}},
		{"SERVING once ready-after elapsed", testapp.Config{ReadyAfter: 5 * time.Second},
			func(_ *testapp.Server, fc *testingclock.FakeClock) { fc.Step(5 * time.Second) },
			want{"": serving, testapp.GRPCServiceReadiness: serving}},
		{"fail-live-after fails the liveness service", testapp.Config{FailLiveAfter: time.Second},
			func(_ *testapp.Server, fc *testingclock.FakeClock) { fc.Step(time.Second) },
			want{"": serving, testapp.GRPCServiceLiveness: notServing}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeClock()
			cfg := tc.cfg
			cfg.GRPCAddr = "127.0.0.1:0"
			cfg.Clock = fc
			s, _ := startApp(t, cfg)
			c := healthClient(t, s.GRPCAddr())
			if tc.act != nil {
				tc.act(s, fc)
			}
			checkAll(t, c, tc.expect)
		})
	}
}

func TestGRPCFollowsHTTPToggle(t *testing.T) {
	s, _ := startApp(t, testapp.Config{GRPCAddr: "127.0.0.1:0"})
	c := healthClient(t, s.GRPCAddr())
	expect(t, s, "POST", "/toggleReady", 200, "Readiness: false")
	checkAll(t, c, want{"": notServing})
	expect(t, s, "GET", "/toggleReady", 200, "Readiness: true")
	checkAll(t, c, want{"": serving})
}

func TestGRPCUnknownServiceIsNotFound(t *testing.T) {
	s, _ := startApp(t, testapp.Config{GRPCAddr: "127.0.0.1:0"})
	if _, code := check(t, healthClient(t, s.GRPCAddr()), "no-such-service"); code != codes.NotFound {
		t.Errorf("Check(no-such-service) code = %s, want NotFound", code)
	}
}

func TestNoGRPCWithoutAddr(t *testing.T) {
	s, _ := startApp(t, testapp.Config{})
	if got := s.GRPCAddr(); got != "" {
		t.Errorf("GRPCAddr() = %q without a gRPC address, want empty", got)
	}
}

// Concurrent flips must leave the gRPC status equal to the HTTP answer: the
// last flip wins in both.
func TestConcurrentTogglesKeepGRPCConsistent(t *testing.T) {
	s, _ := startApp(t, testapp.Config{GRPCAddr: "127.0.0.1:0"})
	const workers, flipsEach = 4, 10 // an even total: ends ready
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range flipsEach {
				resp, err := newClient().Post(s.URL()+"/toggleReady", "", nil)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	if !s.Ready() {
		t.Fatalf("after %d flips Ready() = false, want true", workers*flipsEach)
	}
	expect(t, s, "GET", "/readyz", 200, "")
	checkAll(t, healthClient(t, s.GRPCAddr()), want{"": serving, testapp.GRPCServiceReadiness: serving})
}

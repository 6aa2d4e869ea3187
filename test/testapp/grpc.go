package testapp

import (
	"context"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// gRPC health service names. The kubelet asks for service "" unless the
// probe names one; "readiness" and "liveness" let one app serve both probe
// kinds over gRPC.
const (
	GRPCServiceReadiness = "readiness"
	GRPCServiceLiveness  = "liveness"
)

// grpcHealth is the stock grpc-go health server, so gRPC probes are tested
// against the real thing rather than our reading of the protocol.
type grpcHealth struct {
	lis    net.Listener
	srv    *grpc.Server
	health *health.Server
}

func listenGRPC(addr string) (*grpcHealth, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("testapp: listen for gRPC: %w", err)
	}
	g := &grpcHealth{lis: lis, srv: grpc.NewServer(), health: health.NewServer()}
	healthpb.RegisterHealthServer(g.srv, g.health)
	return g, nil
}

func (g *grpcHealth) addr() string { return g.lis.Addr().String() }

func (g *grpcHealth) serve() error {
	if err := g.srv.Serve(g.lis); err != nil {
		return fmt.Errorf("testapp: serve gRPC on %s: %w", g.lis.Addr(), err)
	}
	return nil
}

func servingStatus(ok bool) healthpb.HealthCheckResponse_ServingStatus {
	if ok {
		return healthpb.HealthCheckResponse_SERVING
	}
	return healthpb.HealthCheckResponse_NOT_SERVING
}

func (g *grpcHealth) set(ready, healthy bool) {
	g.health.SetServingStatus("", servingStatus(ready))
	g.health.SetServingStatus(GRPCServiceReadiness, servingStatus(ready))
	g.health.SetServingStatus(GRPCServiceLiveness, servingStatus(healthy))
}

// stop ends Watch streams with NOT_SERVING and lets unary checks finish; a
// Watch never ends by itself, so GracefulStop is cut short when ctx ends.
func (g *grpcHealth) stop(ctx context.Context) {
	g.health.Shutdown()
	done := make(chan struct{})
	go func() {
		g.srv.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		g.srv.Stop()
		<-done
	}
}

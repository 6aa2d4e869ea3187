package testapp

import (
	"fmt"
	"time"

	"k8s.io/utils/clock"
)

// DefaultName is the name answered on / when neither --name nor $HOSTNAME
// gives one.
const DefaultName = "testapp"

// Config is one resolved test app. The zero value is a ready, live app named
// "testapp" on 127.0.0.1 at a free port, without gRPC or exec file.
type Config struct {
	// Name is answered on / and attached to every log line.
	Name string
	// Addr is the HTTP listen address (host:port). Port 0 picks a free port;
	// Server.Addr reports the one bound. Empty means "127.0.0.1:0".
	Addr string
	// GRPCAddr is the gRPC health listen address; empty runs no gRPC server.
	GRPCAddr string
	// ReadyAfter keeps readiness failing for this long after start.
	ReadyAfter time.Duration
	// FailLiveAfter makes /healthz fail for good this long after start;
	// 0 never fails it.
	FailLiveAfter time.Duration
	// ExecFile is created at start and removed/created by /toggleExec; empty
	// disables /toggleExec.
	ExecFile string
	// SleepOnTerm keeps Run serving this long after its context ends.
	SleepOnTerm time.Duration
	// Clock times ReadyAfter, FailLiveAfter and SleepOnTerm; nil is the real
	// clock. Tests pass a fake clock to step through those rules.
	Clock clock.WithDelayedExecution
	// ServiceAccountDir holds the pod's service-account token and CA
	// (token, ca.crt), which /fetch?token=serviceaccount sends and trusts;
	// empty is DefaultServiceAccountDir, where Kubernetes mounts them.
	ServiceAccountDir string
}

// DefaultServiceAccountDir is where Kubernetes mounts a pod's
// service-account token and the API server's CA.
const DefaultServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return c
}

func (c Config) validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"ReadyAfter", c.ReadyAfter},
		{"FailLiveAfter", c.FailLiveAfter},
		{"SleepOnTerm", c.SleepOnTerm},
	} {
		if d.v < 0 {
			return fmt.Errorf("testapp config: %s must not be negative, got %s", d.name, d.v)
		}
	}
	return nil
}

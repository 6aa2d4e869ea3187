package readiness

import (
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/test/testapp"
)

// TestGRPCReadinessProbe: a gRPC readiness probe follows the container's
// health service both ways, and says why it fails.
func TestGRPCReadinessProbe(t *testing.T) {
	app := startApp(t, testapp.Config{GRPCAddr: "127.0.0.1:0"})
	service := testapp.GRPCServiceReadiness
	p := &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: int32(portOf(t, app.GRPCAddr())), Service: &service}},
		PeriodSeconds:    1,
		FailureThreshold: 1,
	}
	a := start(t, []Container{{Name: "app", Probe: p, Serving: true}}, Options{UserPort: portOf(t, app.Addr())})
	a.waitReady(t, true)
	app.SetReady(false)
	a.waitReady(t, false)
	if r := a.report(t, "app"); !strings.Contains(r.Reason, `service unhealthy (responded with "NOT_SERVING")`) {
		t.Errorf("reason %q, want the gRPC probe's message", r.Reason)
	}
	app.SetReady(true)
	a.waitReady(t, true)
}

// TestAggressiveProbeSeesThePortOpen: a periodSeconds: 0 probe keeps
// probing until the container listens, however late that is.
func TestAggressiveProbeSeesThePortOpen(t *testing.T) {
	// A free port: bound and closed again. Only this test uses it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	port := portOf(t, addr)
	a := start(t, []Container{{Name: "app", Probe: tcpProbe(port, 0), Serving: true}}, Options{UserPort: port})
	eventually(t, "a few refused attempts", func() bool { return a.report(t, "app").Attempts >= 3 })
	if a.Ready() {
		t.Fatal("ready with nothing listening")
	}
	startApp(t, testapp.Config{Addr: addr})
	a.waitReady(t, true)
	// Only the changes are logged, not every refused attempt.
	if n := strings.Count(a.logs.String(), "connection refused"); n > 1 {
		t.Errorf("the refused attempts were logged %d times, want at most once:\n%s", n, a.logs.String())
	}
}

// TestKubeletThresholdsAndPeriod drives one container's worker on a fake
// clock: first probe at once, then every periodSeconds, ready after
// successThreshold passes, unready after failureThreshold failures.
func TestKubeletThresholdsAndPeriod(t *testing.T) {
	app := startApp(t, testapp.Config{})
	clk := testingclock.NewFakeClock(time.Now())
	p := httpProbe(portOf(t, app.Addr()), "/readyz", 10)
	p.InitialDelaySeconds = 5
	p.SuccessThreshold = 2
	p.FailureThreshold = 3
	a := start(t, []Container{{Name: "app", Probe: p, Serving: true}}, Options{Clock: clk, UserPort: portOf(t, app.Addr())})

	attempts := func() int { return a.Report()[0].Attempts }
	// step moves the clock by d once the worker waits on it, and waits
	// for the attempt that brings the count to want.
	step := func(d time.Duration, want int) {
		t.Helper()
		eventually(t, "the worker waits for its next tick", clk.HasWaiters)
		clk.Step(d)
		eventually(t, "the attempt ran", func() bool { return attempts() == want })
	}
	eventually(t, "the worker waits out initialDelaySeconds", clk.HasWaiters)
	if n := attempts(); n != 0 {
		t.Fatalf("%d attempts before initialDelaySeconds passed", n)
	}
	for i, s := range []struct {
		d         time.Duration
		appReady  bool
		wantReady bool
	}{
		{5 * time.Second, true, false}, // first pass: 1 of successThreshold 2
		{10 * time.Second, true, true}, // second pass: ready
		{10 * time.Second, false, true},
		{10 * time.Second, false, true},
		{10 * time.Second, false, false}, // third failure: unready
		{10 * time.Second, true, false},  // 1 of 2
		{10 * time.Second, true, true},
	} {
		app.SetReady(s.appReady)
		step(s.d, i+1)
		if got := a.Ready(); got != s.wantReady {
			t.Errorf("after attempt %d (app ready %v): gate ready %v, want %v", i+1, s.appReady, got, s.wantReady)
		}
	}
}

func TestContainers(t *testing.T) {
	tcp := tcpProbe(80, 0)
	grpc := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 90}}}
	type spec struct {
		name      string
		probe     bool
		delegated bool
		serving   bool
	}
	for _, tc := range []struct {
		name string
		cfg  contract.Config
		want []spec
	}{
		{"plain queue-proxy env: one unnamed probe is the user container's",
			contract.Config{ReadinessProbes: []*corev1.Probe{tcp}},
			[]spec{{"user-container", true, false, true}}},
		{"plain queue-proxy env: sidecar probes are numbered",
			contract.Config{ReadinessProbes: []*corev1.Probe{tcp, grpc}},
			[]spec{{"user-container", true, false, true}, {"container-1", true, false, false}}},
		{"no probes: always ready, still one serving container",
			contract.Config{},
			[]spec{{"user-container", false, false, true}}},
		{"injected env: named probes, other containers, delegated and watched",
			contract.Config{
				ReadinessProbes:     []*corev1.Probe{tcp, grpc},
				ReadinessContainers: []string{"web", "cache"},
				Containers:          []string{"web", "cache", "logger", "exec"},
				DelegatedReadiness:  []string{"web", "exec"},
				WatchedProbes:       map[string]contract.ContainerProbes{"zeta": {}, "alpha": {}},
			},
			[]spec{
				{"web", true, true, true}, {"cache", true, false, false}, {"logger", false, false, false},
				{"exec", false, true, false}, {"alpha", false, false, false}, {"zeta", false, false, false},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			specs, err := Containers(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var got []spec
			for _, s := range specs {
				got = append(got, spec{s.Name, s.Probe != nil, s.Delegated, s.Serving})
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("container %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

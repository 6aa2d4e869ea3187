package gate

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/gateenv"
	"github.com/podgate/podgate/probe"
	"github.com/podgate/podgate/testapp"
)

func TestSidecarReadinessCountsForTheGate(t *testing.T) {
	app := startApp(t, testapp.Config{Name: "app"})
	sidecar := startApp(t, testapp.Config{Name: "sidecar"})
	sidecar.SetReady(false)
	cfg := gateConfig(t, app.Addr())
	sideProbe := httpProbe(portOf(t, sidecar.Addr()), "/readyz", 1)
	sideProbe.FailureThreshold = 1
	cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(portOf(t, app.Addr()), 0), sideProbe}
	cfg.ReadinessContainers = []string{"app", "sidecar"}
	tg := startGate(t, cfg, Options{})

	t.Run("a sidecar that is not ready yet keeps the gate unready", func(t *testing.T) {
		eventually(t, "the sidecar was probed", func() bool { return tg.agg.Report()[1].Attempts > 0 })
		if tg.Ready() {
			t.Fatal("gate ready while the sidecar is not")
		}
		if code := tg.health(t); code != http.StatusServiceUnavailable {
			t.Errorf("health = %d, want 503", code)
		}
		v := tg.verbose(t)
		contains(t, "verbose readyz", v, "[+]app ok")
		contains(t, "verbose readyz", v, "[-]sidecar failed: readiness probe: failure: HTTP probe failed with statuscode: 503")
	})
	t.Run("the gate is ready once the sidecar is", func(t *testing.T) {
		sidecar.SetReady(true)
		tg.waitReady(t, true)
		if code := tg.health(t); code != http.StatusOK {
			t.Errorf("health = %d, want 200", code)
		}
	})
	t.Run("a sidecar that becomes unready makes the gate unready", func(t *testing.T) {
		sidecar.SetReady(false)
		tg.waitReady(t, false)
		if code := tg.health(t); code != http.StatusServiceUnavailable {
			t.Errorf("health = %d, want 503", code)
		}
	})
}

func TestGRPCReadinessProbe(t *testing.T) {
	app := startApp(t, testapp.Config{GRPCAddr: "127.0.0.1:0"})
	cfg := gateConfig(t, app.Addr())
	service := testapp.GRPCServiceReadiness
	p := &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: int32(portOf(t, app.GRPCAddr())), Service: &service}},
		PeriodSeconds:    1,
		FailureThreshold: 1,
	}
	cfg.ReadinessProbes = []*corev1.Probe{p}
	tg := startGate(t, cfg, Options{})
	tg.waitReady(t, true)
	app.SetReady(false)
	tg.waitReady(t, false)
	contains(t, "verbose readyz", tg.verbose(t), `service unhealthy (responded with "NOT_SERVING")`)
	app.SetReady(true)
	tg.waitReady(t, true)
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
	cfg := gateConfig(t, addr)
	cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(portOf(t, addr), 0)}
	tg := startGate(t, cfg, Options{})
	eventually(t, "a few refused attempts", func() bool { return tg.agg.Report()[0].Attempts >= 3 })
	if tg.Ready() {
		t.Fatal("ready with nothing listening")
	}
	startApp(t, testapp.Config{Addr: addr})
	tg.waitReady(t, true)
	// Only the changes are logged, not every refused attempt.
	if n := strings.Count(tg.logs.String(), "connection refused"); n > 1 {
		t.Errorf("the refused attempts were logged %d times, want at most once:\n%s", n, tg.logs.String())
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
	a := newAggregator([]containerSpec{{name: "app", probe: p, serving: true}},
		aggregatorOptions{Clock: clk, Target: probe.Target{PodIP: "127.0.0.1"}, UserPort: portOf(t, app.Addr())})
	ctx, cancel := context.WithCancel(context.Background())
	wait := a.start(ctx)
	defer wait()
	defer cancel()

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

// feedSource is a StatusSource the test feeds by hand.
type feedSource struct{ ch chan []ContainerStatus }

func newFeedSource() *feedSource { return &feedSource{ch: make(chan []ContainerStatus)} }

func (f *feedSource) Watch(ctx context.Context, update func([]ContainerStatus)) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case s := <-f.ch:
			update(s)
		}
	}
}

func TestDelegatedReadinessComesFromTheStatusSource(t *testing.T) {
	app := startApp(t, testapp.Config{})
	cfg := gateConfig(t, app.Addr())
	cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(portOf(t, app.Addr()), 0)}
	cfg.ReadinessContainers = []string{"app"}
	cfg.DelegatedReadiness = []string{"exec-sidecar"}
	src := newFeedSource()
	tg := startGate(t, cfg, Options{Status: src})
	send := func(s ...ContainerStatus) {
		select {
		case src.ch <- s:
		case <-time.After(testWait):
			t.Fatal("the gate does not watch its status source")
		}
	}
	running := func(name string, ready bool) ContainerStatus {
		return ContainerStatus{Name: name, Ready: ready, Running: true, ContainerID: "id-" + name}
	}

	eventually(t, "the serving container is probed ready", func() bool { return tg.agg.Report()[0].Ready })
	if tg.Ready() {
		t.Fatal("ready before the exec sidecar's status is known")
	}
	contains(t, "verbose readyz", tg.verbose(t), "[-]exec-sidecar failed: waiting for the container's status")

	send(running("app", true), running("exec-sidecar", true))
	tg.waitReady(t, true)

	send(running("app", true), running("exec-sidecar", false))
	tg.waitReady(t, false)
	contains(t, "verbose readyz", tg.verbose(t), "[-]exec-sidecar failed: not ready per container status")

	send(running("app", true), running("exec-sidecar", true))
	tg.waitReady(t, true)

	t.Run("a container the status says is not ready is not ready, probe or not", func(t *testing.T) {
		send(ContainerStatus{Name: "app", Message: "waiting: CrashLoopBackOff"}, running("exec-sidecar", true))
		tg.waitReady(t, false)
		contains(t, "verbose readyz", tg.verbose(t), "[-]app failed: not ready per container status: waiting: CrashLoopBackOff")
		send(running("app", true), running("exec-sidecar", true))
		tg.waitReady(t, true)
	})
}

func TestDelegatedReadinessWithoutStatusSourceIsNeverReady(t *testing.T) {
	app := startApp(t, testapp.Config{})
	cfg := gateConfig(t, app.Addr())
	cfg.DelegatedReadiness = []string{"exec-sidecar"}
	tg := startGate(t, cfg, Options{})
	contains(t, "verbose readyz", tg.verbose(t), "[-]exec-sidecar failed: readiness is delegated to the node agent, but the gate has no status source")
	if tg.Ready() {
		t.Error("ready without knowing the delegated container")
	}
}

// TestRestartSeenByStatusSource: a new container ID marks the container
// down until one of its probes passes, even if its probe would only run
// seconds later.
func TestRestartSeenByStatusSource(t *testing.T) {
	app := startApp(t, testapp.Config{})
	addr := app.Addr()
	cfg := gateConfig(t, addr)
	cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(portOf(t, addr), 30)}
	cfg.ReadinessContainers = []string{"app"}
	src := newFeedSource()
	tg := startGate(t, cfg, Options{Status: src})
	src.ch <- []ContainerStatus{{Name: "app", Ready: true, Running: true, ContainerID: "one"}}
	tg.waitReady(t, true)

	stopApp(t, app)
	src.ch <- []ContainerStatus{{Name: "app", Ready: true, Running: true, ContainerID: "two", RestartCount: 1}}
	tg.waitReady(t, false)
	contains(t, "verbose readyz", tg.verbose(t), "[-]app failed: container restarted (restart count 1)")
	startApp(t, testapp.Config{Addr: addr})
	tg.waitReady(t, true)
}

func TestContainerSpecs(t *testing.T) {
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
		cfg  gateenv.Config
		want []spec
	}{
		{"plain queue-proxy env: one unnamed probe is the user container's",
			gateenv.Config{ReadinessProbes: []*corev1.Probe{tcp}},
			[]spec{{"user-container", true, false, true}}},
		{"plain queue-proxy env: sidecar probes are numbered",
			gateenv.Config{ReadinessProbes: []*corev1.Probe{tcp, grpc}},
			[]spec{{"user-container", true, false, true}, {"container-1", true, false, false}}},
		{"no probes: always ready, still one serving container",
			gateenv.Config{},
			[]spec{{"user-container", false, false, true}}},
		{"injected env: named probes, other containers, delegated and routed",
			gateenv.Config{
				ReadinessProbes:     []*corev1.Probe{tcp, grpc},
				ReadinessContainers: []string{"web", "cache"},
				Containers:          []string{"web", "cache", "logger", "exec"},
				DelegatedReadiness:  []string{"web", "exec"},
				RoutedProbes:        map[string]gateenv.RoutedProbes{"zeta": {}, "alpha": {}},
			},
			[]spec{
				{"web", true, true, true}, {"cache", true, false, false}, {"logger", false, false, false},
				{"exec", false, true, false}, {"alpha", false, false, false}, {"zeta", false, false, false},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			specs, err := containerSpecs(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var got []spec
			for _, s := range specs {
				got = append(got, spec{s.name, s.probe != nil, s.delegated, s.serving})
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

package gate

import (
	"context"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/gate/readiness"
	"github.com/podgate/podgate/test/testapp"
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

// feedSource is a StatusSource the test feeds by hand.
type feedSource struct {
	ch chan []readiness.ContainerStatus
}

func newFeedSource() *feedSource { return &feedSource{ch: make(chan []readiness.ContainerStatus)} }

func (f *feedSource) Watch(ctx context.Context, update func([]readiness.ContainerStatus)) error {
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
	send := func(s ...readiness.ContainerStatus) {
		select {
		case src.ch <- s:
		case <-time.After(testWait):
			t.Fatal("the gate does not watch its status source")
		}
	}
	running := func(name string, ready bool) readiness.ContainerStatus {
		return readiness.ContainerStatus{Name: name, Ready: ready, Running: true, ContainerID: "id-" + name}
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
		send(readiness.ContainerStatus{Name: "app", Message: "waiting: CrashLoopBackOff"}, running("exec-sidecar", true))
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
	src.ch <- []readiness.ContainerStatus{{Name: "app", Ready: true, Running: true, ContainerID: "one"}}
	tg.waitReady(t, true)

	stopApp(t, app)
	src.ch <- []readiness.ContainerStatus{{Name: "app", Ready: true, Running: true, ContainerID: "two", RestartCount: 1}}
	tg.waitReady(t, false)
	contains(t, "verbose readyz", tg.verbose(t), "[-]app failed: container restarted (restart count 1)")
	startApp(t, testapp.Config{Addr: addr})
	tg.waitReady(t, true)
}

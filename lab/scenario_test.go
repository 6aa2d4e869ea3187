package lab_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/lab"
	"github.com/podgate/podgate/lab/load"
	"github.com/podgate/podgate/lab/manifest"
)

// farFuture ends time windows that are open to the end of the recording.
var farFuture = time.Now().Add(24 * time.Hour)

// apiAll lists every object (of the scenario's namespace, on a cluster).
var apiAll = metav1.ListOptions{}

// waitTimeout bounds every single wait of a scenario: generous, since the
// scenarios run in parallel on a loaded 2-core machine under -race; a
// healthy run needs a small fraction of it.
const waitTimeout = 90 * time.Second

// scenarioGrace is the grace period of every pod in the scenarios: the
// gate's drain quiet period is half of it, so a graceful stop of podgate
// takes a few seconds instead of Knative's 30.
const scenarioGrace = 4

// scenario is one seed experiment: a world (podgate run, or a namespace
// of a cluster) running its manifest, load through the world's front
// door, and a timeline of what the test did.
type scenario struct {
	t    *testing.T
	w    lab.World
	tl   *lab.Timeline
	host string
	load *load.Load
	rec  *load.Recording // once the load stopped
	done bool            // the world was stopped and judged
}

// place is where a scenario runs; its start runs the manifest, with
// replicas pods of each workload, and returns once requests for service
// reach the front door's routing.
type place interface {
	start(t *testing.T, m *manifest.Manifest, service string, replicas int) lab.World
}

// local is `podgate run` on a pod range of the scenario's own.
type local struct{ cidr string }

func (l local) start(t *testing.T, m *manifest.Manifest, service string, replicas int) lab.World {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	var args []string
	if replicas != 1 {
		args = []string{"--replicas", strconv.Itoa(replicas)}
	}
	file := write(t, m, service+".yaml")
	w, err := lab.StartLocal(ctx, lab.Config{Binary: podgateBin, PodCIDR: l.cidr, Files: []string{file}, Args: args}, service)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// example reads examples/NAME.yaml with the replacements given, and the
// scenario grace period.
func example(t *testing.T, name string, replace ...string) *manifest.Manifest {
	t.Helper()
	m, err := manifest.Read(filepath.Join("..", "examples", name+".yaml"), replace...)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetPodSpec("terminationGracePeriodSeconds", scenarioGrace); err != nil {
		t.Fatal(err)
	}
	return m
}

// write puts the manifest into the test's own directory.
func write(t *testing.T, m *manifest.Manifest, name string) string {
	t.Helper()
	p, err := m.Write(t.TempDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startScenario runs the manifest where the scenario runs; service is
// the one under test, reached through the front door.
func startScenario(t *testing.T, where place, m *manifest.Manifest, service string, replicas int) *scenario {
	t.Helper()
	s := &scenario{t: t, tl: lab.NewTimeline()}
	s.w = where.start(t, m, service, replicas)
	s.host = s.w.Host(service)
	t.Cleanup(s.cleanup)
	return s
}

func (s *scenario) cleanup() {
	if s.load != nil {
		s.stopLoad()
	}
	if !s.done {
		_ = s.w.Stop(waitTimeout)
	}
	if s.t.Failed() {
		s.t.Logf("timeline:\n%s", s.tl)
		if s.rec != nil {
			s.t.Logf("load: %s", s.rec.Summary(s.tl.Origin()))
		}
		s.t.Logf("%s", s.w.Logs())
	}
}

// within runs one step with the scenario's wait deadline.
func (s *scenario) within(what string, step func(ctx context.Context) error) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.t.Context(), waitTimeout)
	defer cancel()
	if err := step(ctx); err != nil {
		s.t.Fatalf("%s: %v", what, err)
	}
}

// startLoad sends 4 workers, 100 requests/s in all, to the front door
// with the scenario's host.
func (s *scenario) startLoad() {
	s.t.Helper()
	l, err := load.Start(load.Config{URL: s.w.FrontDoorURL(), Host: s.host, Workers: 4, Rate: 100})
	if err != nil {
		s.t.Fatal(err)
	}
	s.load = l
	s.tl.Mark("load started")
}

// stopLoad stops the load, letting held requests finish, and keeps the
// recording.
func (s *scenario) stopLoad() *load.Recording { return s.stopLoadWithin(waitTimeout) }

// stopLoadWithin stops the load, letting held requests finish within d;
// those still held then are cancelled, and recorded as such.
func (s *scenario) stopLoadWithin(d time.Duration) *load.Recording {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	s.rec = s.load.Stop(ctx)
	s.load = nil
	s.tl.Mark("load stopped")
	s.t.Logf("load: %s", strings.TrimSpace(s.rec.Summary(s.tl.Origin())))
	return s.rec
}

// waitOK waits until the load has n more successful requests than now,
// all sent after now.
func (s *scenario) waitOK(n int) {
	s.t.Helper()
	since := time.Now()
	s.within(fmt.Sprintf("%d requests served", n), func(ctx context.Context) error {
		_, err := s.load.Wait(ctx, fmt.Sprintf("%d requests served", n), func(r *load.Recording) bool {
			return r.ServedSince(since) >= n
		})
		return err
	})
}

// waitServedAfter waits until a request sent at or after t was served.
func (s *scenario) waitServedAfter(t time.Time, what string) {
	s.t.Helper()
	s.within(what, func(ctx context.Context) error {
		_, err := s.load.Wait(ctx, what, func(r *load.Recording) bool { return r.SucceededAfter(t) })
		return err
	})
}

// waitHeld waits until every worker has a request in flight that was
// sent at or after t. Called once nothing may serve, that means every
// worker is held.
func (s *scenario) waitHeld(t time.Time) {
	s.t.Helper()
	s.within("every worker held", func(ctx context.Context) error {
		_, err := s.load.Wait(ctx, "every worker held", func(r *load.Recording) bool {
			return len(r.InFlightSince(t)) == 4
		})
		return err
	})
}

// waitReady waits for the service to take traffic and returns its ready
// pod.
func (s *scenario) waitReady(service string) *corev1.Pod {
	s.t.Helper()
	s.within("service serving", func(ctx context.Context) error {
		return s.w.WaitService(ctx, service, lab.Serving)
	})
	return s.readyPod()
}

func (s *scenario) readyPod() *corev1.Pod {
	s.t.Helper()
	var p *corev1.Pod
	s.within("a ready pod", func(ctx context.Context) (err error) {
		p, err = lab.WaitPod(ctx, s.w, "ready", lab.PodReady)
		return err
	})
	return p
}

// waitService waits until the service's status says state and marks the
// instant.
func (s *scenario) waitService(service string, state lab.ServiceState) time.Time {
	s.t.Helper()
	s.within("service "+state.String(), func(ctx context.Context) error {
		return s.w.WaitService(ctx, service, state)
	})
	return s.tl.Mark("service " + state.String())
}

// statusNames waits until what the service's status says of its pods
// names each container, the ones not ready.
func (s *scenario) statusNames(service string, containers ...string) {
	s.t.Helper()
	s.within(fmt.Sprintf("the status naming %v", containers), func(ctx context.Context) error {
		return lab.Poll(ctx, lab.PollInterval, fmt.Sprintf("the status of %s naming %v", service, containers), func(ctx context.Context) (bool, error) {
			msg, err := s.w.StatusMessage(ctx, service)
			if err != nil {
				return false, err
			}
			for _, c := range containers {
				if !strings.Contains(msg, c) {
					return false, fmt.Errorf("status: %s", msg)
				}
			}
			return true, nil
		})
	})
}

func (s *scenario) toggle(pod *corev1.Pod, port int, toggle string, on bool) time.Time {
	s.t.Helper()
	s.within(toggle, func(ctx context.Context) error {
		return s.w.PodHTTP().Toggle(ctx, pod.Status.PodIP, port, toggle, on)
	})
	return s.tl.Mark(fmt.Sprintf("%s :%d set=%t", toggle, port, on))
}

// stop stops the scenario's world gracefully and checks it stopped
// cleanly.
func (s *scenario) stop() {
	s.t.Helper()
	if s.load != nil {
		s.stopLoad()
	}
	err := s.w.Stop(waitTimeout)
	s.done = true
	s.tl.Mark("stopped")
	if err != nil {
		s.t.Error(err)
	}
}

// noFailures fails the test with the failed requests, if any.
func (s *scenario) noFailures(rec *load.Recording) {
	s.t.Helper()
	if f := rec.Failures(); len(f) > 0 {
		s.t.Errorf("%d of %d requests failed, want none:\n%s", len(f), len(rec.Requests), load.FormatRequests(f, s.tl.Origin(), 20))
	}
}

// outAndBack turns a pod's toggle off, waits until the service is seen
// not serving, its status naming the container, and every worker is
// held, turns the toggle back on and waits until requests are served
// again and the service serves. It returns the instants the recording
// is judged by (heldNotServed).
func (s *scenario) outAndBack(service string, pod *corev1.Pod, port int, toggle, container string) outage {
	s.t.Helper()
	var o outage
	o.off = s.toggle(pod, port, toggle, false)
	o.notReady = s.waitService(service, lab.NotServing)
	s.statusNames(service, container)
	s.waitHeld(o.off)
	s.tl.Mark("every worker held")
	o.back = s.toggle(pod, port, toggle, true)
	s.waitServedAfter(o.back, "served again after the toggle came back")
	s.waitService(service, lab.Serving)
	return o
}

// outage is when a scenario took its pod out of service: the toggle went
// off, the service was seen not ready, the toggle went back on.
type outage struct{ off, notReady, back time.Time }

// heldNotServed judges an outage: nothing sent after the service was seen
// not ready was served before the toggle came back, and requests sent
// after the toggle went off were held across its return and then served.
func (s *scenario) heldNotServed(rec *load.Recording, o outage) {
	s.t.Helper()
	if served := rec.ServedBetween(o.notReady, o.back); len(served) > 0 {
		s.t.Errorf("%d requests sent after the service left Ready were served before it could be again:\n%s",
			len(served), load.FormatRequests(served, s.tl.Origin(), 20))
	}
	if released := rec.Released(o.off, o.back); len(released) == 0 {
		s.t.Errorf("no request sent while the pod was out of service was held and then served")
	}
}

// validate runs `podgate validate -f file`.
func validate(t *testing.T, file string) {
	t.Helper()
	out, err := exec.Command(podgateBin, "validate", "-f", file).CombinedOutput()
	if err != nil {
		t.Fatalf("podgate validate -f %s: %v\n%s", file, err, out)
	}
}

package lab_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/apiclient"
	"github.com/podgate/podgate/lab"
)

// farFuture ends time windows that are open to the end of the recording.
var farFuture = time.Now().Add(24 * time.Hour)

// apiAll lists every object.
var apiAll = apiclient.ListOptions{}

// waitTimeout bounds every single wait of a scenario: generous, since the
// scenarios run in parallel on a loaded 2-core machine under -race; a
// healthy run needs a small fraction of it.
const waitTimeout = 90 * time.Second

// scenarioGrace is the grace period of every pod in the scenarios: the
// gate's drain quiet period is half of it, so a graceful stop of podgate
// takes a few seconds instead of Knative's 30.
const scenarioGrace = 4

// scenario is one seed experiment: a podgate, load through its front
// door, and a timeline of what the test did.
type scenario struct {
	t    *testing.T
	p    *lab.Process
	tl   *lab.Timeline
	host string
	load *lab.Load
	rec  *lab.Recording // once the load stopped
	done bool           // podgate was stopped and judged
}

// example reads examples/NAME.yaml with the replacements given, and the
// scenario grace period.
func example(t *testing.T, name string, replace ...string) *lab.Manifest {
	t.Helper()
	m, err := lab.ReadManifest(filepath.Join("..", "examples", name+".yaml"), replace...)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetPodSpec("terminationGracePeriodSeconds", scenarioGrace); err != nil {
		t.Fatal(err)
	}
	return m
}

// write puts the manifest into the test's own directory.
func write(t *testing.T, m *lab.Manifest, name string) string {
	t.Helper()
	p, err := m.Write(t.TempDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startScenario runs podgate on the manifest with its own pod range;
// host is the front door host of the service under test.
func startScenario(t *testing.T, cidr, host, file string, args ...string) *scenario {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	p, err := lab.Start(ctx, lab.Config{Binary: podgateBin, PodCIDR: cidr, Files: []string{file}, Args: args})
	if err != nil {
		t.Fatal(err)
	}
	s := &scenario{t: t, p: p, tl: lab.NewTimeline(), host: host}
	t.Cleanup(s.cleanup)
	if err := p.WaitRoute(ctx, host); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *scenario) cleanup() {
	if s.load != nil {
		s.stopLoad()
	}
	if !s.done {
		_, _ = s.p.Stop(waitTimeout)
	}
	if s.t.Failed() {
		s.t.Logf("timeline:\n%s", s.tl)
		if s.rec != nil {
			s.t.Logf("load: %s", s.rec.Summary(s.tl.Origin()))
		}
		s.t.Logf("podgate stderr:\n%s", s.p.Stderr())
		out := s.p.Stdout()
		if len(out) > 64<<10 {
			out = "[…]" + out[len(out)-64<<10:]
		}
		s.t.Logf("podgate stdout (containers):\n%s", out)
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
	l, err := lab.StartLoad(lab.LoadConfig{URL: s.p.FrontDoorURL(), Host: s.host, Workers: 4, Rate: 100})
	if err != nil {
		s.t.Fatal(err)
	}
	s.load = l
	s.tl.Mark("load started")
}

// stopLoad stops the load, letting held requests finish, and keeps the
// recording.
func (s *scenario) stopLoad() *lab.Recording {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
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
		_, err := s.load.Wait(ctx, fmt.Sprintf("%d requests served", n), func(r *lab.Recording) bool {
			ok := 0
			for _, q := range r.StartedBetween(since, farFuture) {
				if q.OK() {
					ok++
				}
			}
			return ok >= n
		})
		return err
	})
}

// waitServedAfter waits until a request sent at or after t was served.
func (s *scenario) waitServedAfter(t time.Time, what string) {
	s.t.Helper()
	s.within(what, func(ctx context.Context) error {
		_, err := s.load.Wait(ctx, what, func(r *lab.Recording) bool { return r.SucceededAfter(t) })
		return err
	})
}

// waitHeld waits until every worker has a request in flight that was
// sent at or after t. Called once nothing may serve, that means every
// worker is held.
func (s *scenario) waitHeld(t time.Time) {
	s.t.Helper()
	s.within("every worker held", func(ctx context.Context) error {
		_, err := s.load.Wait(ctx, "every worker held", func(r *lab.Recording) bool {
			n := 0
			for _, q := range r.InFlight {
				if !q.Start.Before(t) {
					n++
				}
			}
			return n == 4
		})
		return err
	})
}

// waitReady waits for the service to be Ready and returns its ready pod.
func (s *scenario) waitReady(service string) *corev1.Pod {
	s.t.Helper()
	s.within("service Ready", func(ctx context.Context) error {
		_, err := lab.WaitServiceCondition(ctx, s.p.Client(), "default", service, lab.ServiceReady(corev1.ConditionTrue, ""))
		return err
	})
	return s.readyPod()
}

func (s *scenario) readyPod() *corev1.Pod {
	s.t.Helper()
	var p *corev1.Pod
	s.within("a ready pod", func(ctx context.Context) (err error) {
		p, err = lab.WaitPod(ctx, s.p.Client(), "ready", lab.PodReady)
		return err
	})
	return p
}

// waitService waits for the Ready condition and marks the instant.
func (s *scenario) waitService(service string, status corev1.ConditionStatus, reason string) time.Time {
	s.t.Helper()
	want := lab.ServiceReady(status, reason)
	s.within(want.String(), func(ctx context.Context) error {
		_, err := lab.WaitServiceCondition(ctx, s.p.Client(), "default", service, want)
		return err
	})
	return s.tl.Mark("service " + want.String())
}

func (s *scenario) toggle(podIP string, port int, toggle string, on bool) time.Time {
	s.t.Helper()
	s.within(toggle, func(ctx context.Context) error { return lab.Toggle(ctx, podIP, port, toggle, on) })
	return s.tl.Mark(fmt.Sprintf("%s :%d set=%t", toggle, port, on))
}

// stop stops podgate gracefully and checks it stopped cleanly.
func (s *scenario) stop() {
	s.t.Helper()
	if s.load != nil {
		s.stopLoad()
	}
	code, err := s.p.Stop(waitTimeout)
	s.done = true
	s.tl.Mark("podgate stopped")
	if err != nil {
		s.t.Error(err)
	}
	if code != 0 {
		s.t.Errorf("podgate exit code after SIGTERM = %d, want 0", code)
	}
	if strings.Contains(s.p.Stderr(), "podgate: front door:") {
		s.t.Errorf("the front door did not shut down cleanly")
	}
}

// noFailures fails the test with the failed requests, if any.
func (s *scenario) noFailures(rec *lab.Recording) {
	s.t.Helper()
	if f := rec.Failures(); len(f) > 0 {
		s.t.Errorf("%d of %d requests failed, want none:\n%s", len(f), len(rec.Requests), lab.FormatRequests(f, s.tl.Origin(), 20))
	}
}

// outAndBack turns a pod's toggle off, waits until the service is seen
// not ready and every worker is held, turns the toggle back on and waits
// until requests are served again and the service is Ready. It returns
// the instants the recording is judged by (heldNotServed).
func (s *scenario) outAndBack(service, podIP string, port int, toggle string) outage {
	s.t.Helper()
	var o outage
	o.off = s.toggle(podIP, port, toggle, false)
	o.notReady = s.waitService(service, corev1.ConditionUnknown, "NoHealthyBackends")
	s.waitHeld(o.off)
	s.tl.Mark("every worker held")
	o.back = s.toggle(podIP, port, toggle, true)
	s.waitServedAfter(o.back, "served again after the toggle came back")
	s.waitService(service, corev1.ConditionTrue, "")
	return o
}

// outage is when a scenario took its pod out of service: the toggle went
// off, the service was seen not ready, the toggle went back on.
type outage struct{ off, notReady, back time.Time }

// heldNotServed judges an outage: nothing sent after the service was seen
// not ready was served before the toggle came back, and requests sent
// after the toggle went off were held across its return and then served.
func (s *scenario) heldNotServed(rec *lab.Recording, o outage) {
	s.t.Helper()
	if served := rec.ServedBetween(o.notReady, o.back); len(served) > 0 {
		s.t.Errorf("%d requests sent after the service left Ready were served before it could be again:\n%s",
			len(served), lab.FormatRequests(served, s.tl.Origin(), 20))
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

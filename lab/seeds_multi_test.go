package lab_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/lab"
	"github.com/podgate/podgate/lab/load"
)

// Seed "12-cross-port-readiness": traffic on 8080, health on 8090.
// Readiness follows 8090 alone: the app's own /readyz on 8080 turned off
// changes nothing; 8090 off takes the pod out of service (requests are
// held, none fails), 8090 on brings it back while 8080 is still off.
func TestSeedCrossPortReadinessFollowsHealthPort(t *testing.T) {
	t.Parallel()
	m := example(t, "cross-port-readiness")
	if err := m.SetPodSpec("timeoutSeconds", 30); err != nil { // held requests are released, never 504
		t.Fatal(err)
	}
	s := startScenario(t, local{"127.0.72.0/24"}, m, "cross-port", 1)
	pod := s.waitReady("cross-port")
	s.startLoad()
	s.waitOK(50)

	trafficOff := s.toggle(pod, 8080, lab.ToggleReady, false)
	s.waitServedAfter(trafficOff, "served with the traffic port's /readyz off")
	out := s.outAndBack("cross-port", pod, 8090, lab.ToggleReady, "app")
	rec := s.stopLoad()
	s.stop()

	s.heldNotServed(rec, out)
	s.noFailures(rec)
}

// Seed "2-multi-container liveness": each container's liveness toggled
// off in turn. Knative's queue-proxy never learnt of the restarts and
// passed 502s on; through podgate each container is restarted and not one
// request fails.
func TestSeedMultiContainerLivenessRestartsEachLosesNoRequest(t *testing.T) {
	t.Parallel()
	seedMultiContainerLiveness(t, local{"127.0.74.0/24"})
}

func seedMultiContainerLiveness(t *testing.T, where place) {
	s := startScenario(t, where, example(t, "multi-container-liveness"), "test-probe", 1)
	pod := s.waitReady("test-probe")
	s.startLoad()
	s.waitOK(50)

	for _, c := range []struct {
		name string
		port int
	}{{"first-container", 8080}, {"second-container", 8090}} {
		before := lab.ContainerStatus(pod, c.name).RestartCount
		s.toggle(pod, c.port, lab.ToggleLive, false)
		s.within(c.name+" restarted", func(ctx context.Context) (err error) {
			pod, err = lab.WaitRestart(ctx, s.w, pod.Name, c.name, before)
			return err
		})
		restarted := s.tl.Mark(c.name + " restarted")
		s.waitServedAfter(restarted, "served after "+c.name+" restarted")
		s.within("pod ready again", func(ctx context.Context) (err error) {
			pod, err = lab.WaitPod(ctx, s.w, "ready again", lab.Named(pod.Name, lab.PodReady))
			return err
		})
	}
	rec := s.stopLoad()
	s.stop()

	s.noFailures(rec)
}

// "Drain holds" (seed: the wait-for-drain preStop did not hold the pod):
// deleting one pod of two under load loses no request — the activator
// stops sending to it at once, its gate drains what is in flight before
// any container stops — and the replacement serves.
func TestSeedDeletePodUnderLoadLosesNoRequest(t *testing.T) {
	t.Parallel()
	seedDeletePodUnderLoad(t, local{"127.0.75.0/24"})
}

func seedDeletePodUnderLoad(t *testing.T, where place) {
	s := startScenario(t, where, example(t, "multi-container-liveness"), "test-probe", 2)
	s.waitReady("test-probe")
	var pods []string
	s.within("two ready pods", func(ctx context.Context) error {
		return lab.Poll(ctx, lab.PollInterval, "two ready pods", func(ctx context.Context) (bool, error) {
			pods = pods[:0]
			list, err := s.w.ListPods(ctx, apiAll)
			if err != nil {
				return false, err
			}
			for i := range list.Items {
				if lab.PodReady(&list.Items[i]) == nil {
					pods = append(pods, list.Items[i].Name)
				}
			}
			return len(pods) == 2, fmt.Errorf("ready pods %v", pods)
		})
	})
	s.startLoad()
	s.within("both pods serve", func(ctx context.Context) error {
		_, err := s.load.Wait(ctx, "requests served by both pods", func(r *load.Recording) bool {
			seen := map[string]bool{}
			for _, q := range r.Requests {
				if q.OK() {
					seen[strings.TrimSpace(q.Body)] = true
				}
			}
			return seen[pods[0]] && seen[pods[1]]
		})
		return err
	})

	victim := pods[0]
	s.within("delete "+victim, func(ctx context.Context) error {
		err := s.w.DeletePod(ctx, s.w.Namespace(), victim, metav1.DeleteOptions{})
		return err
	})
	deleted := s.tl.Mark("deleted " + victim)
	var replacement *corev1.Pod
	s.within("a replacement ready", func(ctx context.Context) (err error) {
		replacement, err = lab.WaitPod(ctx, s.w, "replacement ready", func(p *corev1.Pod) error {
			if slices.Contains(pods, p.Name) {
				return fmt.Errorf("an original pod")
			}
			return lab.PodReady(p)
		})
		return err
	})
	s.tl.Mark("replacement " + replacement.Name + " ready")
	s.within(victim+" gone", func(ctx context.Context) error { return lab.WaitPodGone(ctx, s.w, victim) })
	s.tl.Mark(victim + " gone")
	s.within("the replacement serves", func(ctx context.Context) error {
		_, err := s.load.Wait(ctx, "a request served by "+replacement.Name, func(r *load.Recording) bool {
			for _, q := range r.StartedBetween(deleted, farFuture) {
				if q.OK() && strings.TrimSpace(q.Body) == replacement.Name {
					return true
				}
			}
			return false
		})
		return err
	})
	rec := s.stopLoad()
	s.stop()

	s.noFailures(rec)
	// The drain held (seed 001: Knative's wait-for-drain did not): each
	// container of the victim was asked to stop only after its gate had
	// drained, because their preStop hooks waited in /wait-for-drain.
	if err := lab.DrainedFirst(s.w.Output(), victim, []string{"first-container", "second-container"}); err != nil {
		t.Error(err)
	}
}

// Seed "5-ksvc-readiness-toggle", sidecar never ready: the revision never
// becomes ready (RevisionMissing, as Knative; on a cluster no ready
// endpoint, the gate's condition naming the sidecar) and no request
// reaches the pod — held requests end with the activator's 504 (held
// until the load stops, on a cluster), the gate proxied none.
func TestSeedSidecarNeverReadyGetsNoTraffic(t *testing.T) {
	t.Parallel()
	seedSidecarNeverReady(t, local{"127.0.76.0/24"})
}

func seedSidecarNeverReady(t *testing.T, where place) {
	m := example(t, "multi-container-readiness")
	if err := m.AppendArgs("second-container", "--ready-after", "1h"); err != nil {
		t.Fatal(err)
	}
	if err := m.SetPodSpec("timeoutSeconds", 3); err != nil {
		t.Fatal(err)
	}
	s := startScenario(t, where, m, "test-probe", 1)
	s.startLoad()

	// The pod status shows both containers ready as soon as they run:
	// their readiness probes moved into the gate, as Knative moves them
	// into queue-proxy. The gate says which one it waits for.
	var pod *corev1.Pod
	s.within("a running pod", func(ctx context.Context) (err error) {
		pod, err = lab.WaitPod(ctx, s.w, "running", func(p *corev1.Pod) error {
			if p.Status.PodIP == "" || p.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("phase %s, IP %q", p.Status.Phase, p.Status.PodIP)
			}
			return nil
		})
		return err
	})
	s.within("the gate: first-container ready, second-container not", func(ctx context.Context) error {
		return lab.Poll(ctx, lab.PollInterval, "first-container ready per the gate", func(ctx context.Context) (bool, error) {
			g, err := s.w.PodHTTP().ReadGateReadiness(ctx, pod.Status.PodIP)
			if err != nil {
				return false, err
			}
			if g.Ready || !g.Containers["first-container"] || g.Containers["second-container"] {
				return false, fmt.Errorf("gate readiness:\n%s", g.Text)
			}
			return true, nil
		})
	})
	since := s.tl.Mark("first-container ready")
	s.waitService("test-probe", lab.NeverServed)
	s.statusNames("test-probe", "second-container")
	var rec *load.Recording
	if s.w.TimesOutHeldRequests() {
		s.within("a held request timed out", func(ctx context.Context) error {
			_, err := s.load.Wait(ctx, "504 activator request timeout", func(r *load.Recording) bool {
				for _, q := range r.WithStatus(504, "activator request timeout") {
					if !q.Start.Before(since) {
						return true
					}
				}
				return false
			})
			return err
		})
		rec = s.stopLoad()
	} else {
		// Held for the activator's --request-timeout, minutes (held since
		// the load started, before the pod ran): the load stops with them
		// held, and cancels them.
		s.waitHeld(time.Time{})
		rec = s.stopLoadWithin(time.Second)
	}
	s.within("gate metrics", func(ctx context.Context) error {
		n, err := s.w.PodHTTP().GateRequests(ctx, pod.Status.PodIP)
		if err == nil && n != 0 {
			t.Errorf("the pod's gate proxied %v requests, want 0", n)
		}
		return err
	})
	s.waitService("test-probe", lab.NeverServed) // never was ready
	s.stop()

	if ok := len(rec.Requests) - len(rec.Failures()); ok != 0 {
		t.Errorf("%d requests were served, want none", ok)
	}
	for _, q := range rec.Failures() {
		timedOut := q.Status == 504 && strings.HasPrefix(q.Body, "activator request timeout")
		cancelled := !s.w.TimesOutHeldRequests() && q.Status == 0 && strings.Contains(q.Err, context.Canceled.Error())
		if !timedOut && !cancelled {
			t.Errorf("want only held requests timing out (or cancelled by the stop, on a cluster), got %s", q.Format(s.tl.Origin()))
		}
	}
	if len(rec.Requests) == 0 {
		t.Error("no request completed")
	}
}

// Seed "5-ksvc-readiness-toggle", sidecar turns unready later: with
// Knative traffic kept flowing through the activator; with podgate it
// stops until the sidecar is ready again (held, none fails), then resumes.
func TestSeedSidecarTurnsUnreadyStopsTraffic(t *testing.T) {
	t.Parallel()
	seedSidecarTurnsUnready(t, local{"127.0.77.0/24"})
}

func seedSidecarTurnsUnready(t *testing.T, where place) {
	m := example(t, "multi-container-readiness")
	if err := m.SetPodSpec("timeoutSeconds", 30); err != nil {
		t.Fatal(err)
	}
	s := startScenario(t, where, m, "test-probe", 1)
	pod := s.waitReady("test-probe")
	s.startLoad()
	s.waitOK(50)

	out := s.outAndBack("test-probe", pod, 8090, lab.ToggleReady, "second-container")
	rec := s.stopLoad()
	s.stop()

	s.heldNotServed(rec, out)
	s.noFailures(rec)
}

// Seed "sidecar exec readiness without a port": Knative rejected it, later
// skipped it. podgate accepts it (validate exits 0, run starts) and
// enforces it: the sidecar's exec file removed stops traffic, restored
// resumes it.
func TestSeedSidecarExecReadinessAcceptedAndEnforced(t *testing.T) {
	t.Parallel()
	seedSidecarExecReadiness(t, local{"127.0.78.0/24"})
}

func seedSidecarExecReadiness(t *testing.T, where place) {
	validate(t, filepath.Join("..", "examples", "sidecar-exec-readiness.yaml"))
	execFile := filepath.Join(t.TempDir(), "sidecar-ready")
	m := example(t, "sidecar-exec-readiness", "/tmp/podgate-example-sidecar-ready", execFile)
	if err := m.SetPodSpec("timeoutSeconds", 30); err != nil {
		t.Fatal(err)
	}
	validate(t, write(t, m, "sidecar-exec.yaml"))
	// Accepted where it runs too: podgate run's check, or the cluster's
	// admission (podgate's validating webhook) at kubectl apply.
	s := startScenario(t, where, m, "sidecar-exec", 1)
	pod := s.waitReady("sidecar-exec")
	s.startLoad()
	s.waitOK(50)

	out := s.outAndBack("sidecar-exec", pod, 8090, lab.ToggleExec, "sidecar")
	rec := s.stopLoad()
	s.stop()

	s.heldNotServed(rec, out)
	s.noFailures(rec)
}

// "No traffic to a pod with an unready container", two replicas: one
// pod's sidecar turns unready (its readiness probe 1 s × 1) under load.
// From one second after the toggle until it is back, that pod answers no
// request — its gate holds what reaches it and, under Knative, hands it
// to the activator once the pod is out of the endpoints — and no request
// fails: the other pod answers.
func TestSeedSidecarUnreadyOtherPodAnswers(t *testing.T) {
	t.Parallel()
	seedSidecarUnreadyOtherPodAnswers(t, local{"127.0.81.0/24"})
}

func seedSidecarUnreadyOtherPodAnswers(t *testing.T, where place) {
	m := example(t, "multi-container-readiness", "port: 8090\n            periodSeconds: 1", "port: 8090\n            periodSeconds: 1\n            failureThreshold: 1")
	if err := m.SetPodSpec("timeoutSeconds", 30); err != nil {
		t.Fatal(err)
	}
	s := startScenario(t, where, m, "test-probe", 2)
	s.waitReady("test-probe")
	var pods []*corev1.Pod
	s.within("two ready pods", func(ctx context.Context) error {
		return lab.Poll(ctx, lab.PollInterval, "two ready pods", func(ctx context.Context) (bool, error) {
			pods = pods[:0]
			list, err := s.w.ListPods(ctx, apiAll)
			if err != nil {
				return false, err
			}
			for i := range list.Items {
				if lab.PodReady(&list.Items[i]) == nil {
					pods = append(pods, &list.Items[i])
				}
			}
			return len(pods) == 2, fmt.Errorf("%d ready pods", len(pods))
		})
	})
	victim, other := pods[0], pods[1]
	s.startLoad()
	servedBy := func(name string, from time.Time) func(r *load.Recording) bool {
		return func(r *load.Recording) bool {
			for _, q := range r.StartedBetween(from, farFuture) {
				if q.OK() && strings.TrimSpace(q.Body) == name {
					return true
				}
			}
			return false
		}
	}
	s.within("both pods serve", func(ctx context.Context) error {
		if _, err := s.load.Wait(ctx, "a request served by "+victim.Name, servedBy(victim.Name, time.Time{})); err != nil {
			return err
		}
		_, err := s.load.Wait(ctx, "a request served by "+other.Name, servedBy(other.Name, time.Time{}))
		return err
	})
	off := s.toggle(victim, 8090, lab.ToggleReady, false)
	// The service keeps serving (the other pod): the victim's own
	// condition names the sidecar.
	s.within("the gate's condition on "+victim.Name+" naming second-container", func(ctx context.Context) error {
		_, err := lab.WaitPod(ctx, s.w, "the gate's condition naming second-container", func(p *corev1.Pod) error {
			if p.Name != victim.Name {
				return errors.New("another pod")
			}
			for _, c := range p.Status.Conditions {
				if string(c.Type) == contract.ContainersReadyCondition && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "second-container") {
					return nil
				}
			}
			return fmt.Errorf("conditions %v", p.Status.Conditions)
		})
		return err
	})
	// The load runs on a while with the sidecar unready: the other pod
	// answers everything.
	s.within("5 s of load served by the other pod", func(ctx context.Context) error {
		_, err := s.load.Wait(ctx, "a request sent 5 s after the toggle served by "+other.Name, servedBy(other.Name, off.Add(5*time.Second)))
		return err
	})
	back := s.toggle(victim, 8090, lab.ToggleReady, true)
	s.within(victim.Name+" serves again", func(ctx context.Context) error {
		_, err := s.load.Wait(ctx, "a request served by "+victim.Name+" after the toggle came back", servedBy(victim.Name, back))
		return err
	})
	rec := s.stopLoad()
	s.stop()

	s.noFailures(rec)
	var last time.Time // the victim's last answer before the toggle came back
	var late []load.Request
	for _, q := range rec.Requests {
		end := q.Start.Add(q.Duration)
		if !q.OK() || strings.TrimSpace(q.Body) != victim.Name || !end.Before(back) {
			continue
		}
		if end.After(last) {
			last = end
		}
		if end.After(off.Add(time.Second)) {
			late = append(late, q)
		}
	}
	t.Logf("%d requests; %s answered its last before the toggle came back at %+.3fs from the toggle off (back at %+.3fs)",
		len(rec.Requests), victim.Name, last.Sub(off).Seconds(), back.Sub(off).Seconds())
	if len(late) > 0 {
		t.Errorf("%d requests answered by %s from 1 s after its sidecar turned unready until it was back:\n%s",
			len(late), victim.Name, load.FormatRequests(late, s.tl.Origin(), 20))
	}
}

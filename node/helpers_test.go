package node

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/clock"

	"github.com/podgate/podgate/admission/validation"
	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/local/controllers"
	"github.com/podgate/podgate/local/objstore"
	"github.com/podgate/podgate/local/preflight"
	"github.com/podgate/podgate/test/syncbuf"
)

// waitLimit bounds every wait in these tests: generous, because they must
// hold on a loaded 2-core machine; a passing test never waits this long.
const waitLimit = 90 * time.Second

// cidrSeq gives each agent its own pod range, so tests run in parallel.
var cidrSeq atomic.Int32

func nextCIDR() string {
	return fmt.Sprintf("127.0.%d.0/24", 100+cidrSeq.Add(1)%100)
}

type harness struct {
	t     testing.TB
	agent *Agent
	store *objstore.Store
	// pods is the API's side of the pods: DELETE marks them there.
	pods *controllers.Pods
	// endpoints writes the EndpointSlices and Services; domain and
	// serving configure it (set them before start).
	endpoints *controllers.Endpoints
	domain    string
	serving   controllers.ServingCounter
	clock     clock.PassiveClock
	out       *syncbuf.Buffer
	logs      *syncbuf.Buffer
	dir       string // a scratch directory, when the test sets one
	force     bool
	// replicas, when set, is every controller's replica count (set it
	// before start), as `podgate run --replicas`.
	replicas *int32
	// unchecked: start skips `podgate run`'s check, so the node gets pods
	// the check refuses, as a cluster's node gets any pod (set it before
	// start).
	unchecked bool

	stopOnce sync.Once
}

type harnessOption func(*Options)

// forceShutdown marks a test whose pods would take their full (long)
// grace period to stop: cleanup kills them at once.
func (h *harness) forceShutdown() { h.force = true }

func withClock(c clock.WithDelayedExecution) harnessOption {
	return func(o *Options) { o.Clock = c }
}

func newHarness(t testing.TB, opts ...harnessOption) *harness {
	t.Helper()
	store := objstore.New(objstore.Options{})
	h := &harness{t: t, store: store, out: &syncbuf.Buffer{}, logs: &syncbuf.Buffer{}}
	o := Options{
		Events:  controllers.NewEvents(store),
		PodCIDR: nextCIDR(),
		Output:  h.out,
		Logger:  slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, f := range opts {
		f(&o)
	}
	h.pods = controllers.NewPods(store, nil)
	if o.Clock != nil {
		h.clock = o.Clock
	}
	o.Pods, o.Source = h.pods, h.pods
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	h.agent = a
	t.Cleanup(h.stop)
	return h
}

// stop shuts the agent down (once); cleanup calls it.
func (h *harness) stop() {
	h.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if h.force {
			cancel()
		}
		if err := h.agent.Shutdown(ctx); err != nil && !h.force {
			h.t.Errorf("shutdown: %v", err)
		}
		if h.t.Failed() {
			h.t.Logf("container output:\n%s\nagent log:\n%s", h.out.String(), h.logs.String())
		}
	})
}

// load parses manifests and validates them as `podgate run` does.
func load(t testing.TB, manifest string) []*workload.Workload {
	t.Helper()
	m, err := workload.Load(strings.NewReader(manifest), "test.yaml")
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	for _, w := range m.Workloads {
		if errs := validation.Validate(w); len(errs) > 0 {
			t.Fatalf("validate %s: %v", w.ID(), errs.ToAggregate())
		}
	}
	return m.Workloads
}

func (h *harness) start(manifest string) []*workload.Workload {
	h.t.Helper()
	ws := load(h.t, manifest)
	h.startWorkloads(ws)
	return ws
}

// check checks the workloads against the agent as `podgate run` does.
func (h *harness) check(ws []*workload.Workload) error {
	return preflight.Check(ws, preflight.OnNode(h.agent, h.replicas))
}

// startWorkloads checks the workloads as `podgate run` does, then runs
// the local control plane: the EndpointSlice and Service controller (the
// slices and services these tests read follow from the pods) and the
// workload controller, which creates the pods the agent runs.
func (h *harness) startWorkloads(ws []*workload.Workload) {
	h.t.Helper()
	if err := h.check(ws); err != nil && !h.unchecked {
		h.t.Fatalf("start: %v", err)
	}
	e, err := controllers.NewEndpoints(controllers.EndpointsConfig{
		Store: h.store, Workloads: ws, Domain: h.domain, Serving: h.serving, Clock: h.clock,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.pods.SetWritten(e.PodWritten)
	if err := e.Start(); err != nil {
		h.t.Fatal(err)
	}
	// Cleanups run last first: the controller stops after the agent.
	h.t.Cleanup(e.Stop)
	h.endpoints = e
	wl, err := controllers.NewWorkloads(controllers.WorkloadsConfig{
		Store: h.store, Workloads: ws, NodeName: h.agent.NodeName(), Replicas: h.replicas, Clock: h.clock,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	// Before the agent's shutdown (cleanups run last first): the pods it
	// stops are not replaced.
	h.t.Cleanup(wl.Stop)
	if err := wl.Start(); err != nil {
		h.t.Fatalf("start: %v", err)
	}
}

// waitPod polls the store until the pod satisfies cond.
func (h *harness) waitPod(name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	var last *corev1.Pod
	for time.Now().Before(deadline) {
		if p, err := h.store.Pods.Get("default", name); err == nil {
			last = p
			if cond(p) {
				return p
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.t.Fatalf("pod %s: not %s within %s; last status: %s", name, what, waitLimit, describeStatus(last))
	return nil
}

func describeStatus(p *corev1.Pod) string {
	if p == nil {
		return "<no pod>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s", p.Status.Phase)
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s", c.Type, c.Status)
	}
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		fmt.Fprintf(&b, " [%s ready=%v restarts=%d state=%s]", cs.Name, cs.Ready, cs.RestartCount, stateString(cs.State))
	}
	return b.String()
}

func stateString(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "Running"
	case s.Waiting != nil:
		return "Waiting(" + s.Waiting.Reason + ")"
	case s.Terminated != nil:
		return fmt.Sprintf("Terminated(%s,%d)", s.Terminated.Reason, s.Terminated.ExitCode)
	}
	return "?"
}

func podReady(p *corev1.Pod) bool { return conditionStatus(p, corev1.PodReady) == corev1.ConditionTrue }

func conditionStatus(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func containerStatus(p *corev1.Pod, name string) corev1.ContainerStatus {
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if cs.Name == name {
			return cs
		}
	}
	return corev1.ContainerStatus{}
}

func restarts(p *corev1.Pod, name string) int32 { return containerStatus(p, name).RestartCount }

// events lists the pod's events with reason.
func (h *harness) events(pod, reason string) []corev1.Event {
	evs, _ := h.store.Events.List("default")
	var out []corev1.Event
	for _, e := range evs {
		if e.InvolvedObject.Name == pod && (reason == "" || e.Reason == reason) {
			out = append(out, *e)
		}
	}
	return out
}

func (h *harness) waitEvent(pod, reason, contains string) corev1.Event {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		for _, e := range h.events(pod, reason) {
			if strings.Contains(e.Message, contains) {
				return e
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.t.Fatalf("pod %s: no %s event containing %q within %s; events: %v", pod, reason, contains, waitLimit, h.events(pod, ""))
	return corev1.Event{}
}

// slice is the workload's EndpointSlice.
func (h *harness) slice(name string) *discoveryv1.EndpointSlice {
	s, err := h.store.EndpointSlices.Get("default", name)
	if err != nil {
		return nil
	}
	return s
}

func endpointOf(s *discoveryv1.EndpointSlice, pod string) *discoveryv1.Endpoint {
	if s == nil {
		return nil
	}
	for i := range s.Endpoints {
		if s.Endpoints[i].TargetRef != nil && s.Endpoints[i].TargetRef.Name == pod {
			return &s.Endpoints[i]
		}
	}
	return nil
}

// get fetches a URL without keep-alives (no connection outlives the test).
func get(url string) (int, string, error) {
	tr := &http.Transport{DisableKeepAlives: true, Proxy: nil}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), nil
}

// eventCount sums the counts of the pod's events with reason whose message
// contains substr.
func (h *harness) eventCount(pod, reason, substr string) int32 {
	var n int32
	for _, e := range h.events(pod, reason) {
		if strings.Contains(e.Message, substr) {
			n += e.Count
		}
	}
	return n
}

// waitEventCount waits until eventCount reaches n: probes are counted by
// what they leave behind, never by sleeping.
func (h *harness) waitEventCount(pod, reason, substr string, n int32) {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for h.eventCount(pod, reason, substr) < n {
		if time.Now().After(deadline) {
			h.t.Fatalf("pod %s: fewer than %d %s events containing %q within %s; events: %v", pod, n, reason, substr, waitLimit, h.events(pod, ""))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// outputCount counts the lines of the pod's output containing substr.
func (h *harness) outputCount(pod, substr string) int {
	n := 0
	for _, line := range strings.Split(h.out.String(), "\n") {
		if strings.HasPrefix(line, pod+"/") && strings.Contains(line, substr) {
			n++
		}
	}
	return n
}

func (h *harness) waitOutputCount(pod, substr string, n int) {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for h.outputCount(pod, substr) < n {
		if time.Now().After(deadline) {
			h.t.Fatalf("pod %s: fewer than %d output lines containing %q within %s", pod, n, substr, waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// restarted waits until the container's restartCount reaches n.
func (h *harness) restarted(pod, container string, n int32) *corev1.Pod {
	h.t.Helper()
	return h.waitPod(pod, fmt.Sprintf("restarted %d time(s)", n), func(p *corev1.Pod) bool {
		return restarts(p, container) >= n
	})
}

func (h *harness) current(pod string) *corev1.Pod {
	h.t.Helper()
	p, err := h.store.Pods.Get("default", pod)
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

// waitFileLines waits until path has at least n lines.
func (h *harness) waitFileLines(path string, n int) {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		data, _ := os.ReadFile(path)
		if strings.Count(string(data), "\n") >= n {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: fewer than %d lines within %s", path, n, waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitGone waits until the pod is no longer in the store.
func (h *harness) waitGone(pod string) {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		if _, err := h.store.Pods.Get("default", pod); err != nil {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("pod %s still in the store after %s: %s", pod, waitLimit, describeStatus(h.current(pod)))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

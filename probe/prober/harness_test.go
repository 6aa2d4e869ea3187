package prober

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/probe"
)

// t0 is where every fake clock starts.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

type key struct {
	container string
	kind      Kind
}

func (k key) String() string { return k.container + "/" + k.kind.String() }

// call is one attempt the worker is blocked in until the test answers it.
type call struct {
	key
	at       time.Duration // since t0
	ctx      context.Context
	reply    chan probe.Outcome
	returned chan struct{} // closed when the attempt function returned
}

// harness drives a Manager on a fake clock with scripted attempts. Every
// helper first settles: it waits (with a deadline) until each worker is
// either parked with no timer fired and no poke pending, or blocked in an
// attempt the test has not answered, and every Update has been delivered.
// After that, nothing more happens until the test moves the clock, answers
// an attempt, or calls the Manager.
type harness struct {
	t   *testing.T
	clk *testclock.FakeClock
	m   *Manager

	mu      sync.Mutex
	pending map[key]*call
	count   map[key]int
	updates []Update
}

type spec struct {
	container string
	kind      Kind
	probe     corev1.Probe
}

func newHarness(t *testing.T, specs []spec, tweak ...func(*Options)) *harness {
	t.Helper()
	h := &harness{
		t:       t,
		clk:     testclock.NewFakeClock(t0),
		pending: map[key]*call{},
		count:   map[key]int{},
	}
	var probes []Probe
	for _, s := range specs {
		p := s.probe
		probes = append(probes, Probe{Container: s.container, Kind: s.kind, Spec: &p, Attempt: h.attemptFor(key{s.container, s.kind})})
	}
	opts := Options{Clock: h.clk, OnUpdate: func(u Update) {
		h.mu.Lock()
		h.updates = append(h.updates, u)
		h.mu.Unlock()
	}}
	for _, f := range tweak {
		f(&opts)
	}
	m, err := NewManager(probes, opts)
	if err != nil {
		t.Fatalf("NewManager: %v", err)
	}
	h.m = m
	t.Cleanup(m.Stop)
	h.settle()
	return h
}

func (h *harness) attemptFor(k key) AttemptFunc {
	return func(ctx context.Context) probe.Outcome {
		c := &call{key: k, at: h.clk.Since(t0), ctx: ctx, reply: make(chan probe.Outcome, 1), returned: make(chan struct{})}
		defer close(c.returned)
		h.mu.Lock()
		if old := h.pending[k]; old != nil {
			h.t.Errorf("%v: second attempt at %v while the one at %v runs", k, c.at, old.at)
		}
		h.pending[k] = c
		h.count[k]++
		h.mu.Unlock()
		select {
		case out := <-c.reply:
			return out
		case <-ctx.Done():
			h.mu.Lock()
			if h.pending[k] == c {
				delete(h.pending, k)
			}
			h.mu.Unlock()
			return probe.Outcome{Result: probe.Error, Err: ctx.Err()}
		}
	}
}

func (h *harness) settle() {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !h.settled() {
		if time.Now().After(deadline) {
			h.t.Fatalf("workers did not settle within 10s")
		}
		time.Sleep(50 * time.Microsecond)
	}
}

func (h *harness) settled() bool {
	h.m.mu.Lock()
	workers := append([]*worker(nil), h.m.workers...)
	h.m.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range workers {
		if !w.idle() && h.pending[key{w.c.name, w.kind}] == nil {
			return false
		}
	}
	return h.m.out.idle()
}

// step moves the clock and lets everything due happen.
func (h *harness) step(d time.Duration) {
	h.t.Helper()
	h.clk.Step(d)
	h.settle()
}

// start reports a running container, started now.
func (h *harness) start(container, id string) {
	h.t.Helper()
	h.m.ContainerStarted(container, id, h.clk.Now())
	h.settle()
}

// expect returns the attempt k is blocked in.
func (h *harness) expect(k key) *call {
	h.t.Helper()
	h.settle()
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.pending[k]
	if c == nil {
		h.t.Fatalf("at %v: no attempt of %v running (running: %v)", h.clk.Since(t0), k, h.runningLocked())
	}
	return c
}

// answer ends the attempt k is blocked in with out.
func (h *harness) answer(k key, out probe.Outcome) *call {
	h.t.Helper()
	c := h.expect(k)
	h.mu.Lock()
	delete(h.pending, k)
	h.mu.Unlock()
	c.reply <- out
	<-c.returned
	h.settle()
	return c
}

// running lists the attempts in progress, sorted.
func (h *harness) running() string {
	h.settle()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.runningLocked()
}

func (h *harness) runningLocked() string {
	var s []string
	for k := range h.pending {
		s = append(s, k.String())
	}
	return sortJoin(s)
}

func (h *harness) attempts(k key) int {
	h.settle()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count[k]
}

// take returns the Updates delivered since the last take.
func (h *harness) take() []Update {
	h.settle()
	h.mu.Lock()
	defer h.mu.Unlock()
	u := h.updates
	h.updates = nil
	return u
}

// takeStrings is take, formatted with brief.
func (h *harness) takeStrings() []string {
	var s []string
	for _, u := range h.take() {
		s = append(s, brief(u))
	}
	return s
}

// brief formats an Update for comparison in tests.
func brief(u Update) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s ", u.Container, u.Kind)
	switch u.Type {
	case StateChanged:
		fmt.Fprintf(&b, "%s->%s by %s", u.Previous, u.State, u.Cause)
	default:
		fmt.Fprintf(&b, "%s", u.Type)
	}
	fmt.Fprintf(&b, " started=%t ready=%t", u.Started, u.Ready)
	if u.Restart {
		b.WriteString(" restart")
	}
	return b.String()
}

func sortJoin(s []string) string {
	slices.Sort(s)
	return strings.Join(s, ",")
}

var (
	success = probe.Outcome{Result: probe.Success, Attempts: 1}
	failure = probe.Outcome{Result: probe.Failure, Message: "HTTP probe failed with statuscode: 500", Attempts: 1}
	warning = probe.Outcome{Result: probe.Warning, Message: "Probe terminated redirects, Response body: ", Attempts: 1}
	errored = probe.Outcome{Result: probe.Error, Err: fmt.Errorf(`strconv.Atoi: parsing "http": invalid syntax`), Attempts: 3}
)

func wantUpdates(t *testing.T, h *harness, want ...string) {
	t.Helper()
	got := h.takeStrings()
	if !slices.Equal(got, want) {
		t.Fatalf("at %v updates:\n got  %q\n want %q", h.clk.Since(t0), got, want)
	}
}

package prober

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/podgate/podgate/probe"
)

// AttemptFunc carries out one probe tick (probe.Runner.Run in the runtime)
// and returns its outcome. It must return soon after ctx ends.
type AttemptFunc func(ctx context.Context) probe.Outcome

// Probe is one probe of one container.
type Probe struct {
	Container string
	Kind      Kind
	Spec      *corev1.Probe
	Attempt   AttemptFunc
}

// Options configure a Manager. The zero value is usable.
type Options struct {
	// Clock is the source of time; nil means the real clock.
	Clock clock.Clock
	// OnUpdate receives every Update, one at a time, in order, on a
	// goroutine of the Manager's. It may call the Manager's query and
	// lifecycle methods, but not Stop (Stop waits for OnUpdate to return).
	OnUpdate func(Update)
	// AgentJustStarted delays each worker's first run by a random part of
	// its period, as the kubelet does only right after it starts itself, so
	// probes of already-running containers do not all fire at once.
	AgentJustStarted bool
	// Jitter returns the delay in [0, period) used with AgentJustStarted;
	// nil means uniformly random.
	Jitter func(period time.Duration) time.Duration
	// EveryAttempt adds an Attempted Update after every tick, successes
	// included, for a recording of every probe attempt.
	EveryAttempt bool
}

// Manager runs the probe workers of one pod. Create it with NewManager; it
// must be stopped with Stop.
type Manager struct {
	clock            clock.Clock
	jitter           func(time.Duration) time.Duration
	agentJustStarted bool
	everyAttempt     bool
	out              *dispatcher

	ctx      context.Context // ends in-flight attempts on Stop
	cancel   context.CancelFunc
	stopCh   chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup

	mu          sync.Mutex
	containers  map[string]*container
	workers     []*worker // creation order
	terminating bool
	stopped     bool
}

// container is what the Manager knows of one container. Guarded by
// Manager.mu.
type container struct {
	name      string
	id        string
	startedAt time.Time
	running   bool
	probes    [numKinds]*worker
}

// started is the kubelet's Started: running, and the startup probe (if any)
// has succeeded.
func (c *container) started() bool {
	if !c.running {
		return false
	}
	s := c.probes[Startup]
	return s == nil || s.state == Success
}

// ready is running && Started && readiness Success (or no readiness probe),
// and not condemned by a liveness Failure: podgate takes traffic away
// before the kill, not after the restart.
func (c *container) ready() bool {
	if !c.started() {
		return false
	}
	if l := c.probes[Liveness]; l != nil && l.state == Failure {
		return false
	}
	r := c.probes[Readiness]
	return r == nil || r.state == Success
}

// NewManager validates the probes and starts one worker per probe. Workers
// stay idle until ContainerStarted names their container.
func NewManager(probes []Probe, opts Options) (*Manager, error) {
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	jitter := opts.Jitter
	if jitter == nil {
		jitter = randomJitter
	}
	m := &Manager{
		clock:            clk,
		jitter:           jitter,
		agentJustStarted: opts.AgentJustStarted,
		everyAttempt:     opts.EveryAttempt,
		stopCh:           make(chan struct{}),
		containers:       map[string]*container{},
	}
	var errs []error
	for i, p := range probes {
		cfg, err := NewConfig(p.Kind, p.Spec)
		switch {
		case p.Container == "":
			errs = append(errs, fmt.Errorf("probes[%d]: container name is empty", i))
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("container %q: %w", p.Container, err))
			continue
		case p.Attempt == nil:
			errs = append(errs, fmt.Errorf("container %q: %s: no attempt function", p.Container, p.Kind.field()))
			continue
		}
		c := m.containerLocked(p.Container)
		if c.probes[p.Kind] != nil {
			errs = append(errs, fmt.Errorf("container %q: %s: duplicate probe", p.Container, p.Kind.field()))
			continue
		}
		w := &worker{
			m: m, c: c, kind: p.Kind, cfg: cfg, attempt: p.Attempt,
			kick:  make(chan struct{}, 1),
			state: p.Kind.initial(),
		}
		c.probes[p.Kind] = w
		m.workers = append(m.workers, w)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("prober: %w", errors.Join(errs...))
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.out = newDispatcher(opts.OnUpdate)
	for _, w := range m.workers {
		m.wg.Add(1)
		go w.run()
	}
	return m, nil
}

func (m *Manager) containerLocked(name string) *container {
	c := m.containers[name]
	if c == nil {
		c = &container{name: name}
		m.containers[name] = c
	}
	return c
}

// ContainerStarted tells the Manager that container name runs as id since
// startedAt. A new id is a new container: its probes reset to their initial
// states (readiness Failure, liveness Success, startup Unknown) with fresh
// counters, a liveness/startup worker on hold resumes, and the first probe
// runs once initialDelaySeconds have passed since startedAt. The running id
// reported again is a no-op. Containers without probes may be reported too, so that
// Ready and Started answer for them.
func (m *Manager) ContainerStarted(name, id string, startedAt time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	c := m.containerLocked(name)
	if c.running && c.id == id {
		return
	}
	c.id, c.startedAt, c.running = id, startedAt, true
	now := m.clock.Now()
	var changed []*worker
	var previous []State
	for _, k := range kindOrder {
		if w := c.probes[k]; w != nil {
			prev := w.state
			w.resetForContainer(now)
			if w.state != prev {
				changed = append(changed, w)
				previous = append(previous, prev)
			}
		}
	}
	// Emitted after every reset so each Update carries the final Ready and
	// Started.
	for i, w := range changed {
		w.emit(Update{Type: StateChanged, Previous: previous[i], Cause: CauseContainerReplaced}, now)
	}
}

// ContainerStopped tells the Manager that container name (running as id;
// "" matches any) is no longer running. Its workers go idle until the next
// ContainerStarted, an in-flight attempt is cancelled and dropped, and
// readiness becomes Failure. Liveness and startup keep their states.
func (m *Manager) ContainerStopped(name, id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.containers[name]
	if m.stopped || c == nil || !c.running || (id != "" && id != c.id) {
		return
	}
	c.running = false
	now := m.clock.Now()
	for _, w := range c.probes {
		if w != nil {
			w.invalidate()
			w.manual = false
			w.poke()
		}
	}
	if r := c.probes[Readiness]; r != nil {
		r.set(Failure, CauseContainerStopped, probe.Outcome{}, now)
	}
}

// PodTerminating tells the Manager that the pod is being deleted. Liveness
// and startup workers report Success and stop for good, so shutdown is not
// mistaken for a failure; a worker already on hold after a failure keeps its
// Failure (the kubelet checks the hold first). Readiness keeps probing.
func (m *Manager) PodTerminating() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped || m.terminating {
		return
	}
	m.terminating = true
	now := m.clock.Now()
	for _, w := range m.workers {
		if w.kind == Readiness {
			continue
		}
		w.finished = true
		w.invalidate()
		w.poke()
		if !w.onHold {
			w.set(Success, CausePodTerminating, probe.Outcome{}, now)
		}
	}
}

// PodStatusChanged asks every readiness worker whose state is not Success
// to probe now (if its container is eligible) instead of at its next tick,
// as the kubelet does on each pod status update. The period restarts from
// that run.
func (m *Manager) PodStatusChanged() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	for _, w := range m.workers {
		if w.kind == Readiness && w.state != Success {
			w.requestRun()
		}
	}
}

// Stop ends every worker and waits for them, cancelling the context of any
// in-flight attempt and waiting for it to return, then delivers the Updates
// still queued. Further calls do nothing. Must not be called from OnUpdate.
func (m *Manager) Stop() {
	m.stopOnce.Do(func() {
		m.mu.Lock()
		m.stopped = true
		m.mu.Unlock()
		m.cancel()
		close(m.stopCh)
		m.wg.Wait()
		m.out.close()
	})
}

// Ready reports whether the container is Ready: running, Started, readiness
// Success (or no readiness probe), and not failed by liveness.
func (m *Manager) Ready(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.containers[name]
	return c != nil && c.ready()
}

// Started reports whether the container is running and its startup probe
// (if any) has succeeded.
func (m *Manager) Started(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.containers[name]
	return c != nil && c.started()
}

// State returns the published state of the container's probe of kind k;
// ok is false when the container has no such probe.
func (m *Manager) State(name string, k Kind) (s State, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.containers[name]
	if c == nil || !k.valid() || c.probes[k] == nil {
		return Unknown, false
	}
	return c.probes[k].state, true
}

// Config returns the defaulted configuration of the container's probe of
// kind k; ok is false when there is no such probe.
func (m *Manager) Config(name string, k Kind) (cfg Config, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.containers[name]
	if c == nil || !k.valid() || c.probes[k] == nil {
		return Config{}, false
	}
	return c.probes[k].cfg, true
}

package readiness

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"

	"github.com/podgate/podgate/internal/brokenbuild"
	"github.com/podgate/podgate/probe"
	"github.com/podgate/podgate/probe/prober"
)

// state is the Aggregator's view of one container.
type state struct {
	Container
	// timing is the readiness probe's, with the defaults applied;
	// aggressive is Knative's periodSeconds: 0 mode.
	timing     prober.Config
	aggressive bool
	// liveTiming is the watched liveness probe's, with the kubelet's
	// defaults applied.
	liveTiming prober.Config
	// fastProbe is what fast mode runs: the readiness probe, or for a
	// serving container without one a TCP check of its port, so a
	// container marked down by the proxy can be seen coming back.
	fastProbe *corev1.Probe
	// kick wakes the worker when the container turns suspect.
	kick chan struct{}
	// With HTTP/2 auto-detection: try h2c first (set once h2c passed
	// where HTTP/1.1 failed; HTTP/1.1 comes first again once it passes
	// where h2c failed), and whether the probe's protocol is the serving
	// port's. Only the worker touches these.
	h2cFirst       bool
	probesUserPort bool

	// Guarded by Aggregator.mu.
	verdict    bool           // thresholded result of the gate's own probe; true without one
	counter    prober.Counter // consecutive, counted attempts
	attempts   int            // all attempts, for messages
	last       probe.Outcome
	lastAt     time.Time
	fastSince  time.Time // start of the current fast-probing episode
	suspect    string    // readiness dropped at once (refused connection, restart); cleared by a passing probe
	liveHold   string    // liveness failing: readiness dropped before the kill
	liveFails  int
	liveDown   bool   // the readiness probe failed while liveHold was set (container went away)
	startupErr string // last routed startup probe failed
	status     *ContainerStatus
}

// ready says whether the container counts as ready, and if not, why.
func (c *state) ready(haveSource bool) (bool, string) {
	if brokenbuild.Has(brokenbuild.Readiness) {
		return true, ""
	}
	switch {
	case c.Probe != nil && !c.verdict:
		if c.attempts == 0 {
			return false, "readiness probe not run yet"
		}
		return false, "readiness probe: " + c.lastMessage()
	case c.suspect != "":
		return false, c.suspect
	case c.liveHold != "":
		return false, c.liveHold
	case c.startupErr != "":
		return false, c.startupErr
	}
	if c.Delegated {
		switch {
		case !haveSource:
			return false, "readiness is delegated to the node agent, but the gate has no status source"
		case c.status == nil:
			return false, "waiting for the container's status"
		case !c.status.Ready:
			return false, "not ready per " + statusWords(c.status)
		}
	} else if c.status != nil && !c.status.Ready {
		return false, "not ready per " + statusWords(c.status)
	}
	return true, ""
}

func statusWords(s *ContainerStatus) string {
	if s.Message != "" {
		return "container status: " + s.Message
	}
	if !s.Running {
		return "container status: not running"
	}
	return "container status"
}

func (c *state) lastMessage() string {
	switch {
	case c.attempts == 0:
		return "not run yet"
	case c.last.Result == probe.Error:
		return "errored: " + c.last.Message
	case c.last.Message != "":
		return c.last.Result.String() + ": " + c.last.Message
	}
	return c.last.Result.String()
}

// fast reports whether the worker probes as fast as it can: an aggressive
// probe that is not ready yet, or a container marked down at once.
func (c *state) fast() bool {
	return c.suspect != "" || (c.aggressive && c.Probe != nil && !c.verdict)
}

// Options configure an Aggregator. None is required.
type Options struct {
	// Clock times the probe schedule; nil is the real clock.
	Clock clock.Clock
	// Runner runs the probes; nil is probe.NewRunner().
	Runner *probe.Runner
	// Target is where probes without a host go (the pod IP locally,
	// 127.0.0.1 on Kubernetes), and every gRPC probe.
	Target probe.Target
	// UserPort is the serving container's port, checked by TCP when that
	// container has no readiness probe of its own and was marked down.
	UserPort int
	// HTTP2AutoDetection tries plain-HTTP readiness probes as h2c (HTTP/2
	// with prior knowledge) first (ENABLE_HTTP2_AUTO_DETECTION).
	HTTP2AutoDetection bool
	// HaveStatusSource says whether statuses will come; without one,
	// delegated containers never count as ready.
	HaveStatusSource bool
	// Logger gets the changes of readiness (never the attempts); nil
	// discards them.
	Logger *slog.Logger
	// OnContainerChange is called when a container's readiness changes
	// (and once for each container as New builds the Aggregator), with why
	// it is not ready. It runs with the Aggregator's lock held: it must not
	// call back into the Aggregator.
	OnContainerChange func(container string, ready bool, reason string)
	// OnChange is called when the aggregate changes (and once from New),
	// with every container not ready and why, joined by "; ". The
	// Aggregator's lock is held, as for OnContainerChange.
	OnChange func(ready bool, reasons string)
	// OnAttempt is called after every probe attempt (lock not held).
	OnAttempt func(container string, out probe.Outcome)
	// OnWatched is called after every tick of a watched liveness probe
	// (lock not held).
	OnWatched func(container string, out probe.Outcome)
	// Excluded are containers left out of the aggregation
	// (contract.ExcludeContainersAnnotation): only Report names them.
	Excluded []string
}

// Aggregator keeps the readiness of every container of the pod current:
// the gate's own probes of them, the liveness and startup results the
// gate routes, and what the status source says. Build it with New and
// run its probes with Start.
type Aggregator struct {
	opts    Options
	clock   clock.Clock
	log     *slog.Logger
	serving *state
	// servingH2C: the serving container's readiness probe, on its
	// traffic port, last passed over h2c only, so it speaks h2c there.
	servingH2C atomic.Bool

	mu         sync.Mutex
	containers []*state
	byName     map[string]*state
	// back is closed (and replaced) when the serving container passes a
	// probe after being marked down: held requests retry at once.
	back chan struct{}

	// anyAggressive: some readiness probe is aggressive, so Recheck has
	// work; round is Recheck's round in flight (under mu), closed when done.
	anyAggressive bool
	round         chan struct{}

	ready          atomic.Bool
	readyState     map[string]bool // last reported per container, for OnContainerChange
	aggregateKnown bool
}

// New builds the Aggregator of containers (Containers lists them from
// the gate's configuration; exactly one is the serving container) and
// reports its first verdicts through opts' callbacks. No probe runs until
// Start.
func New(containers []Container, opts Options) *Aggregator {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Runner == nil {
		opts.Runner = probe.NewRunner()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	a := &Aggregator{
		opts:       opts,
		clock:      opts.Clock,
		log:        opts.Logger,
		byName:     map[string]*state{},
		back:       make(chan struct{}),
		readyState: map[string]bool{},
	}
	for _, s := range containers {
		c := &state{Container: s, kick: make(chan struct{}, 1), verdict: s.Probe == nil}
		if p := s.Probe; s.Serving && isPlainHTTP(p) && p.HTTPGet.Port.IntValue() == opts.UserPort &&
			(p.HTTPGet.Host == "" || p.HTTPGet.Host == opts.Target.PodIP) {
			c.probesUserPort = true
		}
		c.fastProbe = s.Probe
		if s.Liveness != nil {
			c.liveTiming, _ = prober.Timing(s.Liveness, false)
		}
		if s.Probe != nil {
			c.timing, c.aggressive = prober.Timing(s.Probe, true)
		} else if s.Serving && opts.UserPort > 0 {
			c.fastProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(opts.UserPort)},
			}}
		}
		if c.aggressive {
			c.fastSince = a.clock.Now()
			a.anyAggressive = true
		}
		if s.Serving {
			a.serving = c
		}
		a.containers = append(a.containers, c)
		a.byName[s.Name] = c
	}
	a.mu.Lock()
	a.recomputeLocked()
	a.mu.Unlock()
	return a
}

// Ready is the aggregate: every container ready.
func (a *Aggregator) Ready() bool { return a.ready.Load() }

// Serving is the name of the serving container.
func (a *Aggregator) Serving() string { return a.serving.Name }

// ServingSpeaksH2C reports whether the serving container's traffic port
// was found to answer h2c and not HTTP/1.1 (HTTP/2 auto-detection), so the
// proxy sends it HTTP/1.1 requests as h2c too.
func (a *Aggregator) ServingSpeaksH2C() bool { return a.servingH2C.Load() }

// Start runs one probe worker per container that has something to probe,
// and one per watched liveness probe, until ctx ends; wait blocks until
// they all returned.
func (a *Aggregator) Start(ctx context.Context) (wait func()) {
	var wg sync.WaitGroup
	for _, c := range a.containers {
		if c.Liveness != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a.watchLiveness(ctx, c)
			}()
		}
		if c.fastProbe == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.work(ctx, c)
		}()
	}
	return wg.Wait
}

// Suspect marks a container not ready at once, for a reason seen outside
// its probe (the proxy's connection was refused, a status source saw it
// restart), and makes its worker probe fast until a probe passes again.
// It reports whether the mark is new.
func (a *Aggregator) Suspect(name, reason string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.byName[name]
	if c == nil || c.suspect != "" || c.fastProbe == nil {
		return false
	}
	c.suspect = reason
	c.fastSince = a.clock.Now()
	a.log.Info("container marked not ready", "container", name, "reason", reason)
	a.recomputeLocked()
	select {
	case c.kick <- struct{}{}:
	default:
	}
	return true
}

// ServingBack returns a channel closed when the serving container next
// passes a probe after being marked down.
func (a *Aggregator) ServingBack() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.back
}

// LivenessResult records one run of a container's liveness probe: a tick
// of the gate's watched copy, or the kubelet's call of an older
// injection's routed probe.
// failureThreshold is that probe's (the kubelet kills at it): readiness is
// dropped once the failures are one short of it, so traffic leaves before
// the kill instead of after the restart (docs/facts.md §3, seed 004).
func (a *Aggregator) LivenessResult(name string, out probe.Outcome, failureThreshold int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.byName[name]
	if c == nil {
		return
	}
	switch {
	case out.Result == probe.Error:
		return // the kubelet drops it too
	case out.Result.Passed():
		c.liveFails = 0
		if c.liveHold != "" {
			a.log.Info("liveness passes again", "container", name)
		}
		c.liveHold, c.liveDown = "", false
	default:
		c.liveFails++
		if c.liveFails >= max(1, failureThreshold-1) && c.liveHold == "" {
			c.liveHold = fmt.Sprintf("liveness probe failed %d time(s), threshold %d: %s", c.liveFails, failureThreshold, out.Message)
			c.liveDown = false
			a.log.Warn("liveness failing: readiness dropped before the kill", "container", name,
				"failures", c.liveFails, "failureThreshold", failureThreshold, "message", out.Message)
		}
	}
	a.recomputeLocked()
}

// StartupResult records one run of a container's routed startup probe: a
// container whose startup probe fails has not started, so is not ready.
func (a *Aggregator) StartupResult(name string, out probe.Outcome) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.byName[name]
	if c == nil || out.Result == probe.Error {
		return
	}
	if out.Result.Passed() {
		c.startupErr = ""
	} else {
		c.startupErr = "startup probe failed: " + out.Message
	}
	a.recomputeLocked()
}

// SetStatuses records what the status source says of every container. A
// container seen replaced (new ID or restart count) is marked down until
// one of its probes passes, and loses a liveness hold (that was the old
// container's).
func (a *Aggregator) SetStatuses(statuses []ContainerStatus) {
	a.mu.Lock()
	defer a.mu.Unlock()
	seen := map[string]bool{}
	for _, s := range statuses {
		c := a.byName[s.Name]
		if c == nil {
			continue
		}
		seen[s.Name] = true
		prev := c.status
		st := s
		c.status = &st
		if prev != nil && (prev.RestartCount != s.RestartCount ||
			(prev.ContainerID != "" && s.ContainerID != "" && prev.ContainerID != s.ContainerID)) {
			c.liveHold, c.liveFails, c.liveDown, c.startupErr = "", 0, false, ""
			if c.fastProbe != nil && c.suspect == "" {
				c.suspect = fmt.Sprintf("container restarted (restart count %d)", s.RestartCount)
				c.fastSince = a.clock.Now()
				select {
				case c.kick <- struct{}{}:
				default:
				}
			}
		}
	}
	for _, c := range a.containers {
		if !seen[c.Name] {
			c.status = nil
		}
	}
	a.recomputeLocked()
}

// recomputeLocked recomputes every container's readiness and the
// aggregate, and reports changes.
func (a *Aggregator) recomputeLocked() {
	all := true
	var why []string
	for _, c := range a.containers {
		ok, reason := c.ready(a.opts.HaveStatusSource)
		all = all && ok
		if !ok {
			why = append(why, c.Name+": "+reason)
		}
		if prev, known := a.readyState[c.Name]; !known || prev != ok {
			a.readyState[c.Name] = ok
			if a.opts.OnContainerChange != nil {
				a.opts.OnContainerChange(c.Name, ok, reason)
			}
		}
	}
	if prev := a.ready.Swap(all); prev != all || !a.aggregateKnown {
		a.aggregateKnown = true
		if a.opts.OnChange != nil {
			a.opts.OnChange(all, strings.Join(why, "; "))
		}
	}
}

// ContainerReport is one container's line in /readyz?verbose.
type ContainerReport struct {
	Name      string
	Ready     bool
	Reason    string // why not ready
	Probe     string // the gate's own probe: handler and schedule, or ""
	Delegated bool
	Serving   bool
	// Excluded: left out of the aggregation by the pod's annotation; the
	// other fields are empty.
	Excluded bool
	// Watched describes the watched liveness probe, or "".
	Watched string
	// Last probe attempt.
	LastResult  string
	LastMessage string
	LastAt      time.Time
	Attempts    int
}

// Report describes every container, in order.
func (a *Aggregator) Report() []ContainerReport {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]ContainerReport, 0, len(a.containers))
	for _, c := range a.containers {
		ok, reason := c.ready(a.opts.HaveStatusSource)
		r := ContainerReport{
			Name: c.Name, Ready: ok, Reason: reason, Delegated: c.Delegated, Serving: c.Serving,
			Attempts: c.attempts, LastAt: c.lastAt,
		}
		if c.Probe != nil {
			r.Probe = describeProbe(c.Probe, c.timing, c.aggressive)
		}
		if c.Liveness != nil {
			r.Watched = "liveness watched: " + describeProbe(c.Liveness, c.liveTiming, false)
			if c.liveFails > 0 {
				r.Watched += fmt.Sprintf(", %d failure(s) in a row", c.liveFails)
			}
		}
		if c.attempts > 0 {
			r.LastResult, r.LastMessage = c.last.Result.String(), c.last.Message
		}
		out = append(out, r)
	}
	for _, name := range a.opts.Excluded {
		out = append(out, ContainerReport{Name: name, Ready: true, Excluded: true})
	}
	return out
}

func describeProbe(p *corev1.Probe, t prober.Config, aggressive bool) string {
	var b strings.Builder
	b.WriteString(probe.HandlerKind(p))
	if aggressive {
		b.WriteString(", aggressive until ready")
	} else {
		fmt.Fprintf(&b, ", every %s", t.Period)
	}
	fmt.Fprintf(&b, ", success %d, failure %d", t.SuccessThreshold, t.FailureThreshold)
	return b.String()
}

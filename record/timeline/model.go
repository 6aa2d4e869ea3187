// Package timeline lays a recording (package recording) out on one time
// axis: who is in it (pods, their containers, endpoints), what each held
// over time (container states, the pod's readiness, the gate's verdict,
// endpoint conditions), every probe attempt, every request with the pod
// that served it, every kill with the stretch in which its pod should
// have got no request, and the scenario's marks. Package
// record/timeline/render draws it as a table or a picture. It is pure: facts
// in, a Model out.
package timeline

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/podgate/podgate/record"
)

// Options bound and shape a view.
type Options struct {
	// From and To bound the view to a range of the recording, relative
	// to its start; To 0 means its end.
	From, To time.Duration
	// Interval is the width of one request summary (text) or one bar of
	// the request histograms (picture); 0 picks one that fits the range.
	Interval time.Duration
	// Now, when later than the last fact, is where the axis ends: a live
	// view's open spans reach the present.
	Now time.Time
}

// Check refuses options that cannot describe a range.
func (o Options) Check() error {
	switch {
	case o.From < 0:
		return fmt.Errorf("--from %s: must not be negative", o.From)
	case o.To < 0:
		return fmt.Errorf("--to %s: must not be negative", o.To)
	case o.To != 0 && o.To <= o.From:
		return fmt.Errorf("--to %s must be after --from %s", o.To, o.From)
	case o.Interval < 0:
		return fmt.Errorf("--interval %s: must not be negative (0 picks one)", o.Interval)
	}
	return nil
}

// Model is a recording laid out for the views: who is in it and what each
// lane shows over time. Spans are closed: an open one ends at End.
type Model struct {
	Header record.Header
	// Start is where relative times count from (the header's start, or
	// the first fact when that is earlier); End is the last fact, or
	// Options.Now when later.
	Start, End time.Time
	// Facts is the number of facts (the header not counted).
	Facts     int
	Pods      []*Pod
	Endpoints []*Endpoint
	// Unrouted are the requests no pod served: held until they timed
	// out, or refused by the front door.
	Unrouted  []Request
	Marks     []Mark
	Truncated *Mark

	sorted []record.Fact
	pods   map[string]*Pod
	eps    map[string]*Endpoint
}

// Pod is one pod of the recording.
type Pod struct {
	// Key is NAMESPACE/NAME; Name is what the views print (the name
	// alone when the recording has one namespace).
	Key, Namespace, Name string
	Containers           []*Container
	// Ready is the pod's readiness over time (state "ready" or
	// "not-ready"): its Ready condition, else the gate's verdict, else
	// every container ready.
	Ready []Span
	// Gate is the gate's verdict over time, when the pod has a gate.
	Gate     []Span
	Requests []Request
	Kills    []Kill
	// Conditions are the pod's conditions at the end, in first-seen order.
	Conditions []record.Condition
	// Address is the pod's endpoint address, when an endpoint named it.
	Address string

	readyCond, derived []Span
	firstSeen          time.Time
	// Kills from Killing events, and from probes' restart flags for a
	// recording without events.
	eventKills, restartKills []Kill
}

// Container is one container of a pod.
type Container struct {
	Name    string
	Sidecar bool
	// Spans are the container's states: "waiting", "running" (not
	// ready), "ready", "killing" (from the kill until it is gone) and
	// "terminated".
	Spans []Span
	// Probes are the probe attempts, in time order.
	Probes []Tick
	// Last is the container's last recorded state.
	Last *record.State
	// LastProbe is the last attempt of each probe kind.
	LastProbe map[string]Tick

	killing      bool
	killByEvent  bool
	killedID     string
	killedCounts int32
}

// Span is a state held from From to To.
type Span struct {
	From, To time.Time
	State    string
	Detail   string
	// Open is set when the state still held at the end of the recording.
	Open bool
}

// Tick is one probe attempt.
type Tick struct {
	At                     time.Time
	Probe, Result, Message string
	Restart                bool
}

// Request is one request through the front door.
type Request struct {
	ID uint64
	// Pod is the key of the pod that served it ("" when none did).
	Pod string
	// Sent is when the front door let it go: to Pod (routed, or released
	// after holding), or back to the client (timed out); else its start.
	// End is when it ended.
	Start, Sent, End time.Time
	Status           int
	Error            string
	Method, Path     string
	// Held is how long the front door held it for a ready pod; TimedOut
	// is set when it gave up waiting.
	Held     time.Duration
	TimedOut bool
}

// The request classes the views colour and count by.
const (
	Class2xx   = "2xx" // below 400: served
	Class4xx   = "4xx"
	Class5xx   = "5xx"
	ClassError = "error" // no HTTP answer (connection refused, reset, the client gone)
	ClassHeld  = "held"  // held for a ready pod and never got one
)

// Classes is the order the views stack the classes in.
var Classes = []string{Class2xx, Class4xx, Class5xx, ClassError, ClassHeld}

// Class is the request's class.
func (r Request) Class() string {
	switch {
	case r.TimedOut || (r.Pod == "" && r.Held > 0):
		return ClassHeld
	case r.Error != "" || r.Status == 0 || r.Status == 499:
		return ClassError
	case r.Status >= 500:
		return Class5xx
	case r.Status >= 400:
		return Class4xx
	}
	return Class2xx
}

// Failed reports whether the request got no useful answer: a 5xx, an
// error, or held until it gave up.
func (r Request) Failed() bool {
	c := r.Class()
	return c == Class5xx || c == ClassError || c == ClassHeld
}

// Kill is one kill of a container (a Killing event, or a probe's restart
// where the recording has no events) and the window in which a request
// sent to its pod would meet a dying or unready container.
type Kill struct {
	At        time.Time
	Container string
	// From is when the pod stopped being ready, if that was before the
	// kill, else the kill; To is when it was ready again (zero: never).
	From, To time.Time
}

// Endpoint is one endpoint of a Service's EndpointSlices over time.
type Endpoint struct {
	Service, Address string
	// Pod is the key of the pod behind it, when the recording says.
	Pod string
	// Spans are its conditions: "ready", "serving" (serving but
	// terminating), "terminating" (not serving), "not-ready".
	Spans []Span
}

// Mark is a named instant.
type Mark struct {
	At   time.Time
	Name string
}

// ErrNoFacts is Build's error for a recording with nothing to show.
var ErrNoFacts = errors.New("the recording has a header and no facts")

// Build lays the facts out. Facts need not be sorted.
func Build(h record.Header, facts []record.Fact, o Options) (*Model, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	m := &Model{Header: h, Facts: len(facts), sorted: record.Sorted(facts),
		pods: map[string]*Pod{}, eps: map[string]*Endpoint{}}
	m.Start, m.End = h.Started, h.Started
	if len(m.sorted) > 0 {
		first, last := m.sorted[0].Time, m.sorted[len(m.sorted)-1].Time
		if m.Start.IsZero() || first.Before(m.Start) {
			m.Start = first
		}
		m.End = last
	}
	if m.Start.IsZero() {
		return nil, ErrNoFacts
	}
	if o.Now.After(m.End) {
		m.End = o.Now
	}
	routes := map[uint64]route{}
	for _, f := range m.sorted {
		m.apply(f, routes)
	}
	m.finish(routes)
	return m, nil
}

// route is what the front door's decisions say of one request.
type route struct {
	sent     time.Time
	pod      string
	held     time.Duration
	timedOut bool
}

// apply adds one fact; long because it is one switch over the kinds.
func (m *Model) apply(f record.Fact, routes map[uint64]route) {
	switch f.Kind {
	case record.KindProbe:
		c := m.container(f)
		if c == nil {
			return
		}
		t := Tick{At: f.Time, Probe: f.Probe.Probe, Result: f.Probe.Result, Message: f.Probe.Message, Restart: f.Probe.Restart}
		c.Probes = append(c.Probes, t)
		c.LastProbe[t.Probe] = t
		if t.Restart && c.beginKill(f.Time, t.Probe+" probe failed: restart") {
			p := m.pod(f)
			p.restartKills = append(p.restartKills, Kill{At: f.Time, Container: c.Name})
		}
	case record.KindContainer:
		if c := m.container(f); c != nil {
			c.applyState(f.Time, *f.State)
			m.pod(f).deriveReady(f.Time)
		}
	case record.KindEvent:
		p := m.pod(f)
		if f.Event.Reason != "Killing" || p == nil {
			return
		}
		name := ""
		if c := m.container(f); c != nil {
			name = c.Name
			c.beginKill(f.Time, f.Event.Message)
			if c.killByEvent {
				return // the same kill, said again
			}
			c.killByEvent = c.killing
		}
		p.eventKills = append(p.eventKills, Kill{At: f.Time, Container: name})
	case record.KindCondition:
		if p := m.pod(f); p != nil {
			p.setCondition(f.Time, *f.Condition)
		}
	case record.KindEndpoint:
		m.applyEndpoint(f)
	case record.KindGate:
		if p := m.pod(f); p != nil {
			p.Gate = setSpan(p.Gate, f.Time, readyWord(f.Gate.Ready), f.Gate.Message)
		}
	case record.KindRoute:
		m.applyRoute(f, routes)
	case record.KindRequest:
		r := *f.Request
		req := Request{ID: r.ID, Start: r.Start, Sent: r.Start, End: f.Time, Status: r.Status, Error: r.Error, Method: r.Method, Path: r.Path}
		if f.Pod != "" {
			req.Pod = m.pod(f).Key
		}
		if req.Start.IsZero() {
			req.Start, req.Sent = f.Time.Add(-r.Latency), f.Time.Add(-r.Latency)
		}
		m.Unrouted = append(m.Unrouted, req) // sorted out by finish
	case record.KindMark:
		m.Marks = append(m.Marks, Mark{At: f.Time, Name: f.Mark.Name})
	case record.KindTruncated:
		m.Truncated = &Mark{At: f.Time, Name: f.Truncated.Message}
	}
}

func (m *Model) applyRoute(f record.Fact, routes map[uint64]route) {
	if f.Route.Decision == record.DecisionPodIn || f.Route.Decision == record.DecisionPodOut {
		return // about a pod, not a request
	}
	r := routes[f.Route.Request]
	switch f.Route.Decision {
	case record.DecisionRouted, record.DecisionReleased:
		r.sent = f.Time
		if f.Pod != "" {
			r.pod = m.pod(f).Key
		}
		r.held = max(r.held, f.Route.Held)
	case record.DecisionHeld:
		r.held = max(r.held, time.Nanosecond) // held, for how long is said later
	case record.DecisionTimedOut:
		// Counted when it gave up, as a released one is when it went.
		r.sent = f.Time
		r.timedOut = true
		r.held = max(r.held, f.Route.Held)
	}
	routes[f.Route.Request] = r
}

func (m *Model) applyEndpoint(f record.Fact) {
	e := f.Endpoint
	key := e.Service + "\x00" + e.Address
	lane := m.eps[key]
	if lane == nil {
		lane = &Endpoint{Service: e.Service, Address: e.Address}
		m.eps[key] = lane
		m.Endpoints = append(m.Endpoints, lane)
	}
	if f.Pod != "" {
		p := m.pod(f)
		lane.Pod = p.Key
		p.Address = e.Address
	}
	if e.Removed {
		lane.Spans = closeSpan(lane.Spans, f.Time)
		return
	}
	lane.Spans = setSpan(lane.Spans, f.Time, EndpointState(*e), "")
}

// EndpointState is an endpoint's conditions in one word: "ready",
// "serving" (terminating but still serving), "terminating" or
// "not-ready". Unset conditions read as Kubernetes reads them: ready and
// serving, not terminating.
func EndpointState(e record.Endpoint) string {
	is := func(b *bool, unset bool) bool {
		if b == nil {
			return unset
		}
		return *b
	}
	ready, serving, terminating := is(e.Ready, true), is(e.Serving, is(e.Ready, true)), is(e.Terminating, false)
	switch {
	case terminating && serving:
		return "serving"
	case terminating:
		return "terminating"
	case ready:
		return "ready"
	}
	return "not-ready"
}

// finish closes the open spans at End, files the requests under their
// pods and computes the kills' windows.
func (m *Model) finish(routes map[uint64]route) {
	reqs := m.Unrouted
	m.Unrouted = nil
	for _, r := range reqs {
		if rt, ok := routes[r.ID]; ok {
			if !rt.sent.IsZero() {
				r.Sent = rt.sent
			}
			if r.Pod == "" {
				r.Pod = rt.pod
			}
			r.Held, r.TimedOut = rt.held, rt.timedOut
		}
		if p := m.pods[r.Pod]; p != nil && r.Pod != "" {
			p.Requests = append(p.Requests, r)
		} else {
			r.Pod = ""
			m.Unrouted = append(m.Unrouted, r)
		}
	}
	namespaces := map[string]bool{}
	for _, p := range m.Pods {
		namespaces[p.Namespace] = true
	}

	for _, p := range m.Pods {
		if len(namespaces) > 1 {
			p.Name = p.Key
		}
		switch {
		case len(p.readyCond) > 0:
			p.Ready = p.readyCond
		case len(p.Gate) > 0:
			p.Ready = p.Gate
		default:
			p.Ready = p.derived
		}
		// A pod is born not ready: until its first verdict, if that is
		// ready, it was not.
		if len(p.Ready) > 0 && p.Ready[0].State == "ready" && p.Ready[0].From.After(p.firstSeen) {
			p.Ready = append([]Span{{From: p.firstSeen, To: p.Ready[0].From, State: "not-ready", Detail: "not ready yet"}}, p.Ready...)
		}
		p.readyFromEndpoint(m.Endpoints)
		p.readyFromProbes(m.sorted)
		p.Ready = endSpans(p.Ready, m.End)
		p.Gate = endSpans(p.Gate, m.End)
		for _, c := range p.Containers {
			c.Spans = endSpans(c.Spans, m.End)
		}
		p.Kills = p.eventKills
		if len(p.Kills) == 0 {
			p.Kills = p.restartKills
		}
		for i := range p.Kills {
			p.Kills[i].From, p.Kills[i].To = p.window(p.Kills[i].At)
		}
		slices.SortStableFunc(p.Requests, func(a, b Request) int { return a.Sent.Compare(b.Sent) })
	}
	for _, e := range m.Endpoints {
		e.Spans = endSpans(e.Spans, m.End)
	}
	slices.SortStableFunc(m.Unrouted, func(a, b Request) int { return a.Sent.Compare(b.Sent) })
}

// readyFromEndpoint moves each change of the pod's readiness back to
// when its endpoint showed the same change, where the endpoints' watch
// saw that first. The endpoint follows the pod's status (podgate run
// updates it within the same write), and two watches of one API see a
// write at instants apart: without this, a request the front door
// released the moment it saw the endpoint ready would count as sent to
// a pod not ready yet.
func (p *Pod) readyFromEndpoint(eps []*Endpoint) {
	for i := 1; i < len(p.Ready); i++ {
		ready := p.Ready[i].State == "ready"
		at := p.Ready[i].From
		for _, e := range eps {
			if e.Pod != p.Key {
				continue
			}
			for _, sp := range e.Spans {
				if (sp.State == "ready") == ready && sp.From.After(p.Ready[i-1].From) && sp.From.Before(at) {
					at = sp.From
				}
			}
		}
		p.Ready[i-1].To, p.Ready[i].From = at, at
	}
}

// readyFromProbes moves a change of the pod back to ready to the node
// agent's probe attempt that made it: a readiness (or startup) probe
// whose published state turned to success last, when nothing else that
// holds a pod's readiness (the gate's verdict, a readiness gate's
// condition) turned ready after it. The agent records its attempts as
// they come and writes the status from them, which the recording sees
// through a watch; the front door, on a quicker watch of the same API,
// may send the pod a request in between.
func (p *Pod) readyFromProbes(facts []record.Fact) {
	for i := 1; i < len(p.Ready); i++ {
		if p.Ready[i].State != "ready" {
			continue
		}
		since, at := p.Ready[i-1].From, p.Ready[i].From
		var probe, other time.Time
		last := map[string]string{} // container/probe → published state
		for _, f := range facts {
			if f.Namespace+"/"+f.Pod != p.Key || f.Time.After(at) {
				continue
			}
			switch {
			case f.Kind == record.KindProbe && f.Probe.Probe != "liveness":
				key := f.Container + "/" + f.Probe.Probe
				if f.Probe.State == "success" && last[key] != "success" && f.Time.After(since) {
					probe = f.Time
				}
				last[key] = f.Probe.State
			case f.Kind == record.KindGate && f.Gate.Ready && f.Time.After(since):
				other = f.Time
			case f.Kind == record.KindCondition && f.Condition.Status == "True" && f.Time.After(since) &&
				f.Condition.Type != "Ready" && f.Condition.Type != "ContainersReady":
				other = f.Time
			}
		}
		if !probe.IsZero() && probe.After(other) && probe.Before(at) {
			p.Ready[i-1].To, p.Ready[i].From = probe, probe
		}
	}
}

// window is the stretch around a kill at t in which the pod should get
// no request: from when it stopped being ready (if before t) to when it
// was ready again.
func (p *Pod) window(t time.Time) (from, to time.Time) {
	from = t
	for _, s := range p.Ready {
		if s.State != "ready" && !s.From.After(t) && s.To.After(t) {
			from = s.From
		}
		if s.State == "ready" && s.From.After(t) {
			return from, s.From
		}
	}
	return from, time.Time{}
}

// NotReadyAt reports whether the pod was not ready, or one of its
// containers being killed, at t.
func (p *Pod) NotReadyAt(t time.Time) bool {
	for _, k := range p.Kills {
		if !t.Before(k.From) && (k.To.IsZero() || t.Before(k.To)) {
			return true
		}
	}
	for _, s := range p.Ready {
		if !t.Before(s.From) && t.Before(s.To) {
			return s.State != "ready"
		}
	}
	return false
}

func (m *Model) pod(f record.Fact) *Pod {
	if f.Pod == "" {
		return nil
	}
	key := f.Namespace + "/" + f.Pod
	p := m.pods[key]
	if p == nil {
		p = &Pod{Key: key, Namespace: f.Namespace, Name: f.Pod, firstSeen: f.Time}
		m.pods[key] = p
		m.Pods = append(m.Pods, p)
	}
	return p
}

func (m *Model) container(f record.Fact) *Container {
	p := m.pod(f)
	if p == nil || f.Container == "" {
		return nil
	}
	for _, c := range p.Containers {
		if c.Name == f.Container {
			return c
		}
	}
	c := &Container{Name: f.Container, LastProbe: map[string]Tick{}}
	p.Containers = append(p.Containers, c)
	return c
}

// applyState records a container status. While the container is being
// killed, statuses of the same instance still running keep it "killing".
func (c *Container) applyState(t time.Time, st record.State) {
	c.Sidecar = c.Sidecar || st.Sidecar
	if c.killing && st.State == "running" && st.ContainerID == c.killedID && st.RestartCount == c.killedCounts {
		c.Last = &st
		return
	}
	c.killing, c.killByEvent = false, false
	state := st.State
	if state == "running" && st.Ready {
		state = "ready"
	}
	c.Spans = setSpan(c.Spans, t, state, StateDetail(st))
	c.Last = &st
}

// beginKill starts a "killing" span if the container runs; it reports
// whether this is a new kill.
func (c *Container) beginKill(t time.Time, why string) bool {
	if c.killing || c.Last == nil || c.Last.State != "running" {
		return false
	}
	c.killing, c.killedID, c.killedCounts = true, c.Last.ContainerID, c.Last.RestartCount
	c.Spans = setSpan(c.Spans, t, "killing", why)
	return true
}

// StateDetail is a container status in words: "running, ready (restarts:
// 2)", "terminated: Error, exit 137", "waiting: CrashLoopBackOff".
func StateDetail(st record.State) string {
	var b strings.Builder
	b.WriteString(st.State)
	if st.Reason != "" {
		b.WriteString(": " + st.Reason)
	}
	if st.ExitCode != nil {
		fmt.Fprintf(&b, ", exit %d", *st.ExitCode)
	}
	if st.State == "running" {
		b.WriteString(", " + notReadyWord(st.Ready))
	}
	if st.RestartCount > 0 {
		fmt.Fprintf(&b, " (restarts: %d)", st.RestartCount)
	}
	return b.String()
}

func (p *Pod) setCondition(t time.Time, c record.Condition) {
	i := slices.IndexFunc(p.Conditions, func(x record.Condition) bool { return x.Type == c.Type })
	if i < 0 {
		p.Conditions = append(p.Conditions, c)
	} else {
		p.Conditions[i] = c
	}
	if c.Type == "Ready" {
		detail := strings.TrimSpace(c.Reason + " " + c.Message)
		p.readyCond = setSpan(p.readyCond, t, readyWord(c.Status == "True"), detail)
	}
}

// deriveReady follows "every container ready", the pod's readiness when
// the recording has neither its Ready condition nor a gate.
func (p *Pod) deriveReady(t time.Time) {
	ready := len(p.Containers) > 0
	for _, c := range p.Containers {
		ready = ready && c.Last != nil && c.Last.Ready
	}
	p.derived = setSpan(p.derived, t, readyWord(ready), "")
}

func readyWord(ready bool) string {
	if ready {
		return "ready"
	}
	return "not-ready"
}

func notReadyWord(ready bool) string {
	if ready {
		return "ready"
	}
	return "not ready"
}

// setSpan ends the open span at t and opens one in state, unless the open
// one is in state already (its detail then follows).
func setSpan(spans []Span, t time.Time, state, detail string) []Span {
	if n := len(spans); n > 0 && spans[n-1].Open {
		if spans[n-1].State == state {
			spans[n-1].Detail = detail
			return spans
		}
		spans[n-1].To, spans[n-1].Open = t, false
	}
	return append(spans, Span{From: t, State: state, Detail: detail, Open: true})
}

func closeSpan(spans []Span, t time.Time) []Span {
	if n := len(spans); n > 0 && spans[n-1].Open {
		spans[n-1].To, spans[n-1].Open = t, false
	}
	return spans
}

// endSpans ends the open span at end; it stays marked Open.
func endSpans(spans []Span, end time.Time) []Span {
	if n := len(spans); n > 0 && spans[n-1].Open {
		spans[n-1].To = end
	}
	return spans
}

// Range is the part of the recording a view shows.
func (m *Model) Range(o Options) (from, to time.Time) {
	from, to = m.Start.Add(o.From), m.End
	if o.To > 0 {
		to = m.Start.Add(o.To)
	}
	if !to.After(from) {
		to = from.Add(time.Second)
	}
	return from, to
}

// niceSteps are the interval and axis steps the views pick from.
var niceSteps = []time.Duration{
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour,
}

// Step is the smallest nice step (10 ms, 20 ms, 50 ms, … 1 h) that cuts
// span into at most n pieces: axis ticks and request intervals.
func Step(span time.Duration, n int) time.Duration {
	for _, s := range niceSteps {
		if span <= s*time.Duration(n) {
			return s
		}
	}
	return span / time.Duration(n)
}

// Interval is the request interval of a view over from–to: the option,
// else one that cuts the range into at most n.
func Interval(o Options, from, to time.Time, n int) time.Duration {
	if o.Interval > 0 {
		return o.Interval
	}
	return Step(to.Sub(from), n)
}

// Sorted are the facts in time order.
func (m *Model) Sorted() []record.Fact { return m.sorted }

// Pod is the pod of key NAMESPACE/NAME, or nil.
func (m *Model) Pod(key string) *Pod { return m.pods[key] }

// Requests are every request, by the time it was sent.
func (m *Model) Requests() []Request {
	var all []Request
	for _, p := range m.Pods {
		all = append(all, p.Requests...)
	}
	all = append(all, m.Unrouted...)
	slices.SortStableFunc(all, func(a, b Request) int { return a.Sent.Compare(b.Sent) })
	return all
}

// Rel is t relative to the recording's start: +MM:SS.mmm (+H:MM:SS.mmm
// past an hour).
func (m *Model) Rel(t time.Time) string {
	d, sign := t.Sub(m.Start), "+"
	if d < 0 {
		d, sign = -d, "-"
	}
	ms := d.Milliseconds()
	h, mi, s, frac := ms/3600000, ms/60000%60, ms/1000%60, ms%1000
	if h > 0 {
		return fmt.Sprintf("%s%d:%02d:%02d.%03d", sign, h, mi, s, frac)
	}
	return fmt.Sprintf("%s%02d:%02d.%03d", sign, mi, s, frac)
}

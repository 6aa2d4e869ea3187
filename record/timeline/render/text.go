package render

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/podgate/podgate/record"
	"github.com/podgate/podgate/record/timeline"
)

// textIntervals is how many request summaries the text aims at when no
// interval is given.
const textIntervals = 40

// row is one line of the table.
type row struct {
	at        time.Time
	kind, pod string
	what      string
	endpoints string
	run       *probeRun // a probe failure run, worded when complete
}

// Text writes the table seed notes build by hand: time (relative and
// wall clock), kind, pod, what happened, and the endpoints after it;
// probe failures collapsed per container and probe; a line per interval
// summarising the requests per pod; after each kill, how many requests
// were sent to that pod while it was not ready or being killed.
func Text(w io.Writer, m *timeline.Model, o timeline.Options) error {
	from, to := m.Range(o)
	rows := factRows(m)
	rows = append(rows, killRows(m)...)
	rows = append(rows, intervalRows(m, o, from, to)...)
	slices.SortStableFunc(rows, func(a, b row) int { return a.at.Compare(b.at) })
	fillEndpoints(m, rows)

	var b strings.Builder
	writeTextHeader(&b, m, from, to)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "+TIME\tWALL\tKIND\tPOD\tWHAT\tENDPOINTS AFTER")
	for _, r := range rows {
		if r.at.Before(from) || r.at.After(to) {
			continue
		}
		// One line per row: an exec probe's output ends in a newline.
		what := strings.ReplaceAll(r.what, "\n", " ")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.Rel(r.at), r.at.Format("15:04:05.000"), r.kind, orDash(r.pod), what, r.endpoints)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n")
	writeRequestTotals(&b, m, from, to)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeTextHeader(b *strings.Builder, m *timeline.Model, from, to time.Time) {
	title := "podgate timeline"
	if m.Header.Source != "" {
		title += " — " + m.Header.Source
	}
	if m.Header.Detail != "" {
		title += ": " + m.Header.Detail
	}
	fmt.Fprintln(b, title)
	fmt.Fprintf(b, "recording started %s, %s long, %d facts; showing %s to %s\n",
		m.Start.Format("2006-01-02 15:04:05.000 MST"), m.End.Sub(m.Start), m.Facts, m.Rel(from), m.Rel(to))
	if m.Truncated != nil {
		fmt.Fprintf(b, "TRUNCATED at %s: %s\n", m.Rel(m.Truncated.At), m.Truncated.Name)
	}
	for _, p := range m.Pods {
		names := make([]string, 0, len(p.Containers))
		for _, c := range p.Containers {
			names = append(names, c.Name)
		}
		fmt.Fprintf(b, "pod %s %s: %s\n", p.Name, orDash(p.Address), orDash(strings.Join(names, ", ")))
	}
	b.WriteString("\n")
}

// probeRun is consecutive failed attempts of one probe of one container.
type probeRun struct {
	probe, container string
	count            int
	first, last      time.Time
	messages         []string
	errors           int
	restart          bool
}

func (r *probeRun) words() string {
	verb := "failed"
	if r.errors == r.count {
		verb = "errored"
	}
	s := fmt.Sprintf("%s: %s %s", r.container, r.probe, verb)
	if r.count > 1 {
		s += fmt.Sprintf(" %d× in %s", r.count, r.last.Sub(r.first).Round(time.Millisecond))
	}
	if len(r.messages) > 0 {
		s += " (" + strings.Join(r.messages, "; ") + ")"
	}
	if r.restart {
		s += " → restart"
	}
	return s
}

// factRows is a row per fact worth a line; long because it is one switch
// over the kinds, each a few lines.
func factRows(m *timeline.Model) []row {
	var rows []row
	probed := map[string]bool{}
	for _, f := range m.Sorted() {
		if f.Kind == record.KindProbe {
			probed[f.Namespace+"/"+f.Pod] = true
		}
	}
	states := map[string]record.State{}
	runs := map[string]*probeRun{}
	lastOK := map[string]bool{}
	add := func(f record.Fact, kind, what string) {
		rows = append(rows, row{at: f.Time, kind: kind, pod: podName(m, f), what: what})
	}
	for _, f := range m.Sorted() {
		who := f.Namespace + "/" + f.Pod + "/" + f.Container
		switch f.Kind {
		case record.KindProbe:
			if r := probeRow(f, who, runs, lastOK); r != nil {
				r.pod = podName(m, f)
				rows = append(rows, *r)
			}
		case record.KindContainer:
			prev, seen := states[who]
			states[who] = *f.State
			add(f, "container", f.Container+": "+stateChange(prev, *f.State, seen))
		case record.KindEvent:
			if f.Event.Reason == "Unhealthy" && probed[f.Namespace+"/"+f.Pod] {
				continue // the probe lines say it, attempt by attempt
			}
			add(f, "event", f.Event.Reason+": "+f.Event.Message)
		case record.KindCondition:
			c := f.Condition
			what := c.Type + "=" + c.Status
			if why := strings.TrimSpace(c.Reason + " " + c.Message); why != "" {
				what += " (" + why + ")"
			}
			add(f, "condition", what)
		case record.KindEndpoint:
			e := f.Endpoint
			what := e.Service + " " + e.Address + ": " + timeline.EndpointState(*e)
			if e.Removed {
				what = e.Service + " " + e.Address + ": removed"
			}
			add(f, "endpoint", what)
		case record.KindGate:
			what := "gate: " + notReadyWord(f.Gate.Ready)
			if f.Gate.Message != "" {
				what += " (" + f.Gate.Message + ")"
			}
			add(f, "gate", what)
		case record.KindMark:
			add(f, "mark", "▶ "+f.Mark.Name)
		case record.KindTruncated:
			add(f, "truncated", f.Truncated.Message)
		}
	}
	for i := range rows {
		if rows[i].run != nil {
			rows[i].what = rows[i].run.words()
		}
	}
	return rows
}

// probeRow is the row a probe attempt starts, if any: the first of a run
// of failures (later ones join its run), or a success after failures (or
// a readiness or startup probe's first success).
func probeRow(f record.Fact, who string, runs map[string]*probeRun, lastOK map[string]bool) *row {
	p := f.Probe
	key := who + "/" + p.Probe
	ok := p.Result == "success" || p.Result == "warning"
	if ok {
		delete(runs, key)
		wasOK, seen := lastOK[key]
		lastOK[key] = true
		if wasOK || (!seen && p.Probe == "liveness") {
			return nil
		}
		return &row{at: f.Time, kind: "probe", what: f.Container + ": " + p.Probe + " succeeded"}
	}
	lastOK[key] = false
	r := runs[key]
	var out *row
	if r == nil {
		r = &probeRun{probe: p.Probe, container: f.Container, first: f.Time}
		runs[key] = r
		out = &row{at: f.Time, kind: "probe", run: r}
	}
	r.count++
	r.last = f.Time
	if p.Result == "error" {
		r.errors++
	}
	if msg := strings.TrimSpace(p.Message); msg != "" && !slices.Contains(r.messages, msg) && len(r.messages) < 3 {
		r.messages = append(r.messages, msg)
	}
	if p.Restart {
		r.restart = true
		delete(runs, key) // the next instance starts its own run
	}
	return out
}

// stateChange words what changed in a container's status.
func stateChange(prev, st record.State, seen bool) string {
	var parts []string
	if !seen || prev.State != st.State || prev.Reason != st.Reason {
		s := st.State
		if st.Reason != "" {
			s += " (" + st.Reason
			if st.ExitCode != nil {
				s += fmt.Sprintf(", exit %d", *st.ExitCode)
			}
			s += ")"
		}
		parts = append(parts, s)
	}
	if !seen || prev.Ready != st.Ready {
		parts = append(parts, notReadyWord(st.Ready))
	}
	if seen && prev.RestartCount != st.RestartCount {
		parts = append(parts, fmt.Sprintf("restarts %d→%d", prev.RestartCount, st.RestartCount))
	}
	if st.Started != nil && (!seen || prev.Started == nil || *prev.Started != *st.Started) && *st.Started {
		parts = append(parts, "started")
	}
	if len(parts) == 0 {
		return "status updated"
	}
	return strings.Join(parts, ", ")
}

// killRows is a row per kill answering the question a field note could
// not: did requests reach the dying container?
func killRows(m *timeline.Model) []row {
	var rows []row
	for _, p := range m.Pods {
		for _, k := range p.Kills {
			sent, inFlight := killRequests(p, k)
			until := "until ready again at " + m.Rel(k.To)
			if k.To.IsZero() {
				until = "on, never ready again"
			}
			what := fmt.Sprintf("requests sent to %s while not ready or being killed (from %s %s): %d",
				p.Name, m.Rel(k.From), until, len(sent))
			if len(sent) > 0 {
				what += " (" + codes(sent) + ")"
			}
			if len(inFlight) > 0 {
				what += fmt.Sprintf("; in flight at the kill: %d (%s)", len(inFlight), codes(inFlight))
			}
			rows = append(rows, row{at: k.At, kind: "requests", pod: p.Name, what: what})
		}
	}
	return rows
}

// killRequests are the requests sent to p in k's window, and those sent
// before it that were still in flight at the kill.
func killRequests(p *timeline.Pod, k timeline.Kill) (sent, inFlight []timeline.Request) {
	for _, r := range p.Requests {
		switch {
		case !r.Sent.Before(k.From) && (k.To.IsZero() || r.Sent.Before(k.To)):
			sent = append(sent, r)
		case r.Sent.Before(k.From) && r.End.After(k.At):
			inFlight = append(inFlight, r)
		}
	}
	return sent, inFlight
}

// intervalRows summarise the requests per interval, by pod, each at the
// end of its interval.
func intervalRows(m *timeline.Model, o timeline.Options, from, to time.Time) []row {
	iv := timeline.Interval(o, from, to, textIntervals)
	all := m.Requests()
	var rows []row
	i := 0
	for len(all) > 0 && all[0].Sent.Before(from) {
		all = all[1:]
	}
	for t := from; t.Before(to) && i < len(all); t = t.Add(iv) {
		end := t.Add(iv)
		j := i
		for j < len(all) && all[j].Sent.Before(end) {
			j++
		}
		if j > i {
			// Said at the interval's end, after what happened in it.
			at := end
			if at.After(to) {
				at = to
			}
			rows = append(rows, row{at: at, kind: "requests", what: fmt.Sprintf("in the last %s: %s", at.Sub(t), summary(m, all[i:j]))})
		}
		i = j
	}
	return rows
}

// summary words requests as served, failed and held, by pod.
func summary(m *timeline.Model, reqs []timeline.Request) string {
	byPod := map[string][]timeline.Request{}
	var held []timeline.Request
	for _, r := range reqs {
		byPod[r.Pod] = append(byPod[r.Pod], r)
		if r.Held > 0 {
			held = append(held, r)
		}
	}
	var parts []string
	for _, p := range m.Pods {
		if rs := byPod[p.Key]; len(rs) > 0 {
			parts = append(parts, p.Name+" "+servedFailed(rs))
		}
	}
	var refused []timeline.Request
	for _, r := range byPod[""] {
		if r.Class() != timeline.ClassHeld {
			refused = append(refused, r)
		}
	}
	if len(refused) > 0 {
		parts = append(parts, fmt.Sprintf("no pod: failed %d (%s)", len(refused), codes(refused)))
	}
	if len(held) > 0 {
		parts = append(parts, heldWords(held))
	}
	return strings.Join(parts, "; ")
}

func servedFailed(rs []timeline.Request) string {
	var served, failed []timeline.Request
	for _, r := range rs {
		if r.Failed() {
			failed = append(failed, r)
		} else {
			served = append(served, r)
		}
	}
	s := fmt.Sprintf("served %d", len(served))
	if c := codes(served); c != "" && c != fmt.Sprintf("200×%d", len(served)) {
		s += " (" + c + ")"
	}
	if len(failed) > 0 {
		s += fmt.Sprintf(", failed %d (%s)", len(failed), codes(failed))
	}
	return s
}

func heldWords(held []timeline.Request) string {
	timedOut := 0
	for _, r := range held {
		if r.TimedOut {
			timedOut++
		}
	}
	var parts []string
	if released := len(held) - timedOut; released > 0 {
		parts = append(parts, fmt.Sprintf("released %d", released))
	}
	if timedOut > 0 {
		parts = append(parts, fmt.Sprintf("timed out %d", timedOut))
	}
	return fmt.Sprintf("held %d (%s)", len(held), strings.Join(parts, ", "))
}

// codes counts requests by answer: "200×48, 502×2, error×1".
func codes(rs []timeline.Request) string {
	n := map[string]int{}
	for _, r := range rs {
		switch r.Class() {
		case timeline.ClassHeld:
			n["timed out"]++
		case timeline.ClassError:
			if r.Status > 0 {
				n[fmt.Sprintf("%d error", r.Status)]++
			} else {
				n["error"]++
			}
		default:
			n[fmt.Sprint(r.Status)]++
		}
	}
	keys := slices.Sorted(maps.Keys(n))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s×%d", k, n[k]))
	}
	return strings.Join(parts, ", ")
}

// writeRequestTotals ends the table with the totals of the range and the
// answer to "did requests reach a pod that was not ready?".
func writeRequestTotals(b *strings.Builder, m *timeline.Model, from, to time.Time) {
	var in []timeline.Request
	for _, r := range m.Requests() {
		if !r.Sent.Before(from) && !r.Sent.After(to) {
			in = append(in, r)
		}
	}
	if len(in) == 0 {
		b.WriteString("requests: none recorded\n")
		return
	}
	fmt.Fprintf(b, "requests: %d: %s\n", len(in), summary(m, in))
	var parts []string
	total := 0
	for _, p := range m.Pods {
		var bad []timeline.Request
		for _, r := range in {
			if r.Pod == p.Key && p.NotReadyAt(r.Sent) {
				bad = append(bad, r)
			}
		}
		if len(bad) > 0 {
			total += len(bad)
			parts = append(parts, fmt.Sprintf("%s %d (%s)", p.Name, len(bad), codes(bad)))
		}
	}
	fmt.Fprintf(b, "requests sent to a pod while it was not ready or being killed: %d", total)
	if len(parts) > 0 {
		b.WriteString(": " + strings.Join(parts, "; "))
	}
	b.WriteString("\n")
}

// fillEndpoints sets each row's endpoints column: every endpoint after
// the facts up to the row's time.
func fillEndpoints(m *timeline.Model, rows []row) {
	state := map[string]map[string]string{} // service → address → state
	var eps []record.Fact
	for _, f := range m.Sorted() {
		if f.Kind == record.KindEndpoint {
			eps = append(eps, f)
		}
	}
	for i := range rows {
		for len(eps) > 0 && !eps[0].Time.After(rows[i].at) {
			e := eps[0].Endpoint
			if state[e.Service] == nil {
				state[e.Service] = map[string]string{}
			}
			if e.Removed {
				delete(state[e.Service], e.Address)
			} else {
				state[e.Service][e.Address] = timeline.EndpointState(*e)
			}
			eps = eps[1:]
		}
		rows[i].endpoints = endpointsWords(state)
	}
}

func endpointsWords(state map[string]map[string]string) string {
	var parts []string
	for _, svc := range slices.Sorted(maps.Keys(state)) {
		addrs := slices.Sorted(maps.Keys(state[svc]))
		words := make([]string, 0, len(addrs))
		for _, a := range addrs {
			words = append(words, a+" "+state[svc][a])
		}
		if len(words) == 0 {
			words = []string{"none"}
		}
		parts = append(parts, svc+": "+strings.Join(words, ", "))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

func podName(m *timeline.Model, f record.Fact) string {
	if p := m.Pod(f.Namespace + "/" + f.Pod); p != nil {
		return p.Name
	}
	return f.Pod
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// notReadyWord is a readiness in words.
func notReadyWord(ready bool) string {
	if ready {
		return "ready"
	}
	return "not ready"
}

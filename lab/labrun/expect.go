package labrun

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/lab"
	"github.com/podgate/podgate/lab/load"
	"github.com/podgate/podgate/lab/scenario"
	"github.com/podgate/podgate/record"
	"github.com/podgate/podgate/record/timeline"
)

// judge holds what expectations are judged against: the run (its marks,
// the load's requests as the clients saw them, the statuses read, the
// pods bound, podgate's output) and its recording on one time axis.
type judge struct {
	r *runner
	m *timeline.Model
	// namespace holds the scenario's pods; output is the containers'
	// output (World.Output).
	namespace string
	output    func() string
}

// listed is how many requests a failure message lists.
const listed = 10

// judge judges one expectation; long because it is one case per rule.
func (j *judge) judge(e scenario.Expectation) Verdict {
	var v Verdict
	var err error
	switch {
	case e.Failed != nil:
		v.Rule = fmt.Sprintf("failed: %d", *e.Failed)
		v.Detail, err = j.failed(*e.Failed)
	case e.FailedOnly != nil:
		v.Rule = "failedOnly: " + j.answer(e.FailedOnly)
		v.Detail, err = j.failedOnly(e.FailedOnly)
	case e.Answered != nil:
		v.Rule = "answered: " + j.answer(e.Answered)
		v.Detail, err = j.answered(e.Answered)
	case e.NoneServed != nil:
		v.Rule = "noneServed: " + j.window(e.NoneServed)
		if by := e.NoneServed.By; by != "" {
			v.Rule += fmt.Sprintf(" by %s (%s)", by, j.podName(by))
		}
		v.Detail, err = j.noneServed(e.NoneServed)
	case e.Released != nil:
		v.Rule = "released: " + j.window(e.Released)
		v.Detail, err = j.released(e.Released)
	case e.ServedAfter != "":
		v.Rule = "servedAfter: " + j.at(e.ServedAfter)
		v.Detail, err = j.servedAfter(e.ServedAfter)
	case len(e.StatusSays) > 0:
		v.Rule = fmt.Sprintf("statusSays: %q", e.StatusSays)
		v.Detail, err = j.statusSays(e.StatusSays)
	case e.NoTrafficTo != nil:
		v.Rule = fmt.Sprintf("noTrafficTo: %s (%s) while not ready", e.NoTrafficTo.Pod, j.podName(e.NoTrafficTo.Pod))
		if e.NoTrafficTo.Always {
			v.Rule = fmt.Sprintf("noTrafficTo: %s (%s) at all", e.NoTrafficTo.Pod, j.podName(e.NoTrafficTo.Pod))
		}
		v.Detail, err = j.noTraffic(e.NoTrafficTo)
	case e.RequestsSentToKilledPod != nil:
		v.Rule = fmt.Sprintf("requestsSentToKilledPod: %d", *e.RequestsSentToKilledPod)
		v.Detail, err = j.killed(*e.RequestsSentToKilledPod)
	case e.Event != nil:
		v.Rule = "event: " + j.eventWords(e.Event)
		v.Detail, err = j.event(e.Event)
	case e.DrainedFirst != "":
		v.Rule = fmt.Sprintf("drainedFirst: %s (%s)", e.DrainedFirst, j.podName(e.DrainedFirst))
		v.Detail, err = j.drainedFirst(e.DrainedFirst)
	}
	v.Pass = err == nil
	if err != nil {
		v.Detail = err.Error()
	}
	return v
}

// at names a mark with its instant: "exec file back" (+00:12.345).
func (j *judge) at(mark string) string {
	if t, ok := j.r.mark(mark); ok {
		return fmt.Sprintf("%q (%s)", mark, j.m.Rel(t))
	}
	return fmt.Sprintf("%q (never reached)", mark)
}

func (j *judge) window(w *scenario.Window) string {
	from, to := "the start", "the end"
	if w.From != "" {
		from = j.at(w.From)
	}
	if w.To != "" {
		to = j.at(w.To)
	}
	return "from " + from + " to " + to
}

func (j *judge) answer(a *scenario.Answer) string {
	s := fmt.Sprint(a.Status)
	if a.Body != "" {
		s += fmt.Sprintf(" %q", a.Body)
	}
	if a.SentAfter != "" {
		s += " sent after " + j.at(a.SentAfter)
	}
	return s
}

func (j *judge) podName(alias string) string {
	if bp := j.r.pods[alias]; bp != nil {
		return bp.name
	}
	return "never bound"
}

// instant is a mark's time; an error when the run never reached it.
func (j *judge) instant(mark string, unset time.Time) (time.Time, error) {
	if mark == "" {
		return unset, nil
	}
	t, ok := j.r.mark(mark)
	if !ok {
		return t, fmt.Errorf("mark %q was never reached", mark)
	}
	return t, nil
}

// requests is what the load saw; an error when it never ran.
func (j *judge) requests() (*load.Recording, error) {
	if j.r.rec == nil {
		return nil, errors.New("the load never ran")
	}
	return j.r.rec, nil
}

func (j *judge) list(qs []load.Request) string {
	return strings.TrimRight(load.FormatRequests(qs, j.m.Start, listed), "\n")
}

func (j *judge) failed(most int) (string, error) {
	rec, err := j.requests()
	if err != nil {
		return "", err
	}
	f := rec.Failures()
	if len(f) > most {
		return "", fmt.Errorf("%d of %d requests failed, want at most %d:\n%s", len(f), len(rec.Requests), most, j.list(f))
	}
	return fmt.Sprintf("%d of %d requests failed", len(f), len(rec.Requests)), nil
}

// matches reports whether q is the answer a describes, sent at or after t.
func matches(q load.Request, a *scenario.Answer, t time.Time) bool {
	return q.Err == "" && q.Status == a.Status && strings.HasPrefix(q.Body, a.Body) && !q.Start.Before(t)
}

// The answers to a request held past the revision's timeout: podgate's
// and Knative's activators', and the queue container's (queue-proxy's
// words, which the gate keeps).
const (
	activatorTimeoutBody = "activator request timeout"
	queueTimeoutBody     = "request timeout"
)

// matches is the package's matches, and on Knative a held request's
// timeout is one answer whoever gave it: the request waits in Knative's
// activator or in the gate (which holds it while the pod is not ready,
// then hands it to the activator), and whichever's revision timeout ends
// first answers 504.
func (j *judge) matches(q load.Request, a *scenario.Answer, t time.Time) bool {
	if matches(q, a, t) {
		return true
	}
	if j.r.onKnative && a.Status == http.StatusGatewayTimeout && a.Body == activatorTimeoutBody {
		return matches(q, &scenario.Answer{Status: a.Status, Body: queueTimeoutBody}, t)
	}
	return false
}

func (j *judge) failedOnly(a *scenario.Answer) (string, error) {
	rec, err := j.requests()
	if err != nil {
		return "", err
	}
	t, err := j.instant(a.SentAfter, time.Time{})
	if err != nil {
		return "", err
	}
	f := rec.Failures()
	var other []load.Request
	for _, q := range f {
		if !j.matches(q, a, t) {
			other = append(other, q)
		}
	}
	if len(other) > 0 {
		return "", fmt.Errorf("%d of %d failed requests were something else:\n%s", len(other), len(f), j.list(other))
	}
	return fmt.Sprintf("%d of %d requests failed, each so", len(f), len(rec.Requests)), nil
}

func (j *judge) answered(a *scenario.Answer) (string, error) {
	rec, err := j.requests()
	if err != nil {
		return "", err
	}
	t, err := j.instant(a.SentAfter, time.Time{})
	if err != nil {
		return "", err
	}
	var got []load.Request
	for _, q := range rec.Requests {
		if j.matches(q, a, t) {
			got = append(got, q)
		}
	}
	if len(got) == 0 {
		return "", fmt.Errorf("none of %d requests (%s)", len(rec.Requests), counts(rec))
	}
	return fmt.Sprintf("%d requests, the first sent at %s and answered at %s", len(got), j.m.Rel(got[0].Start), j.m.Rel(got[0].End())), nil
}

func counts(rec *load.Recording) string {
	c := rec.Counts()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		parts = append(parts, fmt.Sprintf("%s×%d", k, c[k]))
	}
	return strings.Join(parts, " ")
}

// stretch is a window's instants.
func (j *judge) stretch(w *scenario.Window) (from, to time.Time, err error) {
	if from, err = j.instant(w.From, time.Time{}); err != nil {
		return from, to, err
	}
	to, err = j.instant(w.To, time.Now().Add(24*time.Hour))
	return from, to, err
}

// shortWindow refuses a window too short to judge (scenario.MinWindow):
// such a rule would pass whatever the gate did.
func shortWindow(from, to time.Time) error {
	if !from.IsZero() && to.Sub(from) < scenario.MinWindow {
		return fmt.Errorf("the window lasted %s, too short to show anything (at least %s: hold it open with a `wait: {for: …}` step)",
			to.Sub(from).Round(time.Millisecond), scenario.MinWindow)
	}
	return nil
}

func (j *judge) noneServed(w *scenario.Window) (string, error) {
	rec, err := j.requests()
	if err != nil {
		return "", err
	}
	from, to, err := j.stretch(w)
	if err != nil {
		return "", err
	}
	if err := shortWindow(from, to); err != nil {
		return "", err
	}
	sent := rec.StartedBetween(from, to)
	served := rec.ServedBetween(from, to)
	if w.By == "" {
		if len(served) > 0 {
			return "", fmt.Errorf("%d requests sent in it were served before its end, want none:\n%s", len(served), j.list(served))
		}
		return fmt.Sprintf("%d requests were sent in it; none was served before its end", len(sent)), nil
	}
	name := j.podName(w.By)
	served = slices.DeleteFunc(served, func(q load.Request) bool { return strings.TrimSpace(q.Body) != name })
	if len(served) > 0 {
		return "", fmt.Errorf("%d requests sent in it were served by %s before its end, want none:\n%s", len(served), name, j.list(served))
	}
	return fmt.Sprintf("%d requests were sent in it; none was served by %s before its end", len(sent), name), nil
}

func (j *judge) released(w *scenario.Window) (string, error) {
	rec, err := j.requests()
	if err != nil {
		return "", err
	}
	from, to, err := j.stretch(w)
	if err != nil {
		return "", err
	}
	if err := shortWindow(from, to); err != nil {
		return "", err
	}
	rel := rec.Released(from, to)
	if len(rel) == 0 {
		return "", fmt.Errorf("no request sent in it was held across its end and then served (%d sent in it)", len(rec.StartedBetween(from, to)))
	}
	longest := slices.MaxFunc(rel, func(a, b load.Request) int { return int(a.Duration - b.Duration) })
	return fmt.Sprintf("%d requests sent in it were held across its end and then served; the longest held %s", len(rel), longest.Duration.Round(time.Millisecond)), nil
}

func (j *judge) servedAfter(mark string) (string, error) {
	rec, err := j.requests()
	if err != nil {
		return "", err
	}
	t, err := j.instant(mark, time.Time{})
	if err != nil {
		return "", err
	}
	for _, q := range rec.Requests {
		if q.OK() && !q.Start.Before(t) {
			return fmt.Sprintf("%d served; the first sent at %s", rec.ServedSince(t), j.m.Rel(q.Start)), nil
		}
	}
	after := rec.StartedBetween(t, time.Now().Add(24*time.Hour))
	return "", fmt.Errorf("none of the %d requests sent after it was served", len(after))
}

func (j *judge) statusSays(words []string) (string, error) {
	var seen []string
	for _, s := range j.r.statuses {
		all := true
		for _, w := range words {
			all = all && strings.Contains(s.message, w)
		}
		if all {
			return fmt.Sprintf("at %s: %s", j.m.Rel(s.at), s.message), nil
		}
		seen = append(seen, fmt.Sprintf("%s: %q", j.m.Rel(s.at), s.message))
	}
	if len(seen) == 0 {
		return "", errors.New("no step read the service's status")
	}
	return "", fmt.Errorf("the status read never said it; it said:\n%s", strings.Join(seen, "\n"))
}

// recorded is the recording's pod bound to alias.
func (j *judge) recorded(alias string) (*timeline.Pod, error) {
	bp := j.r.pods[alias]
	if bp == nil {
		return nil, fmt.Errorf("no pod was bound to %q", alias)
	}
	p := j.m.Pod(j.namespace + "/" + bp.name)
	if p == nil {
		return nil, fmt.Errorf("the recording has no pod %s", bp.name)
	}
	return p, nil
}

func (j *judge) noTraffic(n *scenario.NoTraffic) (string, error) {
	p, err := j.recorded(n.Pod)
	if err != nil {
		return "", err
	}
	if n.Always {
		if len(p.Requests) > 0 {
			return "", fmt.Errorf("the front door sent it %d requests, want none:\n%s", len(p.Requests), j.timelineList(p.Requests))
		}
		return "the front door sent it no request", nil
	}
	fd := j.frontDoor()
	var windows []string
	var bad, early []timeline.Request
	seen := map[uint64]bool{}
	judge := func(from, to time.Time, what string) {
		counted, before, _ := fd.inWindow(p, from, to)
		for _, q := range counted {
			if !seen[q.ID] {
				seen[q.ID] = true
				bad = append(bad, q)
			}
		}
		for _, q := range before {
			if !seen[q.ID] {
				seen[q.ID] = true
				early = append(early, q)
			}
		}
		windows = append(windows, what)
	}
	for _, s := range p.Ready {
		if s.State != "ready" {
			judge(s.From, s.To, "not ready "+j.m.Rel(s.From)+"–"+j.m.Rel(s.To))
		}
	}
	for _, k := range p.Kills {
		if j.r.stopping.IsZero() || k.At.Before(j.r.stopping) {
			judge(k.From, k.To, fmt.Sprintf("%s killed at %s", k.Container, j.m.Rel(k.At)))
		}
	}
	where := strings.Join(windows, ", ")
	if fd.answered {
		if len(bad) > 0 {
			return "", fmt.Errorf("it answered %d requests while it was not ready, more than %s from either end of the window (%s):\n%s", len(bad), NewsAllowance, where, j.timelineList(bad))
		}
		return fmt.Sprintf("it answered %d requests, none while it was not ready more than %s from either end of the window (%s)%s", len(p.Requests), NewsAllowance, where, j.earlyWords(fd, early)), nil
	}
	if len(bad) > 0 {
		return "", fmt.Errorf("the front door sent it %d requests while it was not ready, after it knew (%s):\n%s", len(bad), where, j.timelineList(bad))
	}
	return fmt.Sprintf("the front door sent it %d requests, none while it was not ready (%s)%s", len(p.Requests), where, j.earlyWords(fd, early)), nil
}

// earlyWords reports the requests sent (or, judged by answers, answered)
// while the news was on its way.
func (j *judge) earlyWords(fd frontDoor, early []timeline.Request) string {
	if len(early) == 0 {
		return ""
	}
	if fd.answered {
		return fmt.Sprintf("; %d answered within %s of its readiness changing:\n%s", len(early), NewsAllowance, j.timelineList(early))
	}
	return fmt.Sprintf("; %d sent before the front door learned of it:\n%s", len(early), j.timelineList(early))
}

func (j *judge) timelineList(qs []timeline.Request) string {
	var b strings.Builder
	for i, q := range qs {
		if i == listed {
			fmt.Fprintf(&b, "  … %d more\n", len(qs)-i)
			break
		}
		fmt.Fprintf(&b, "  request %d sent at %s: %d %s\n", q.ID, j.m.Rel(q.Sent), q.Status, q.Error)
	}
	return strings.TrimRight(b.String(), "\n")
}

// killed judges the kills of the scenario (not those of podgate's stop)
// in the windows the timeline draws: the requests sent to the pod from
// when it stopped being ready (or the kill) until it was ready again.
func (j *judge) killed(most int) (string, error) {
	fd := j.frontDoor()
	var windows []string
	var bad, early []timeline.Request
	for _, p := range j.m.Pods {
		for _, k := range p.Kills {
			if !j.r.stopping.IsZero() && !k.At.Before(j.r.stopping) {
				continue
			}
			until := "never ready again"
			if !k.To.IsZero() {
				until = "ready again at " + j.m.Rel(k.To)
			}
			counted, before, _ := fd.inWindow(p, k.From, k.To)
			published := "not ready from " + j.m.Rel(k.From)
			if out := readyUntil(p, k.At); out.Sub(k.At) > NewsAllowance {
				// Killed while still published ready (the kubelet's
				// order), and for longer than news takes: no router
				// could know, so nothing sent to it is late news.
				counted, before = append(counted, before...), nil
				published = "killed while still published ready, until " + j.m.Rel(out)
			}
			bad, early = append(bad, counted...), append(early, before...)
			windows = append(windows, fmt.Sprintf("%s of %s killed at %s (%s, %s): %d sent", k.Container, p.Name, j.m.Rel(k.At), published, until, len(counted)))
		}
	}
	if len(windows) == 0 {
		return "", errors.New("the recording holds no kill before podgate's stop: nothing to judge")
	}
	detail := strings.Join(windows, "\n")
	if len(bad) > most {
		if fd.answered {
			return "", fmt.Errorf("%d requests answered by a pod in a kill's window, more than %s from either end, want at most %d:\n%s\n%s", len(bad), NewsAllowance, most, detail, j.timelineList(bad))
		}
		return "", fmt.Errorf("%d requests sent to a pod in a kill's window after the front door knew, want at most %d:\n%s\n%s", len(bad), most, detail, j.timelineList(bad))
	}
	return detail + j.earlyWords(fd, early), nil
}

// readyUntil is when pod p, published ready at t, stopped being so (t
// itself when it was not ready then; far in the future when never).
func readyUntil(p *timeline.Pod, t time.Time) time.Time {
	for _, s := range p.Ready {
		if s.State != "ready" || s.From.After(t) || (!s.Open && !s.To.After(t)) {
			continue
		}
		if s.Open {
			return t.Add(24 * time.Hour)
		}
		return s.To
	}
	return t
}

func (j *judge) eventWords(e *scenario.EventRule) string {
	s := e.Reason
	if e.Container != "" {
		s += " of container " + e.Container
	}
	if e.Pod != "" {
		s += fmt.Sprintf(" in %s (%s)", e.Pod, j.podName(e.Pod))
	}
	if e.Message != "" {
		s += fmt.Sprintf(" saying %q", e.Message)
	}
	return s
}

func (j *judge) event(e *scenario.EventRule) (string, error) {
	pod := ""
	if e.Pod != "" {
		pod = j.podName(e.Pod)
	}
	reasons := map[string]int{}
	for _, f := range j.m.Sorted() {
		if f.Kind != record.KindEvent {
			continue
		}
		reasons[f.Event.Reason]++
		if f.Event.Reason == e.Reason && (pod == "" || f.Pod == pod) && (e.Container == "" || f.Container == e.Container) &&
			strings.Contains(f.Event.Message, e.Message) {
			return fmt.Sprintf("at %s, %s: %s", j.m.Rel(f.Time), f.Pod, f.Event.Message), nil
		}
	}
	var seen []string
	for _, k := range slices.Sorted(maps.Keys(reasons)) {
		seen = append(seen, fmt.Sprintf("%s×%d", k, reasons[k]))
	}
	return "", fmt.Errorf("no such event among the recording's (%s)", strings.Join(seen, " "))
}

func (j *judge) drainedFirst(alias string) (string, error) {
	p, err := j.recorded(alias)
	if err != nil {
		return "", err
	}
	var containers []string
	for _, c := range p.Containers {
		// The gate is the pod's queue container under Knative.
		if c.Name != contract.GateContainerName && c.Name != contract.KnativeQueueContainerName {
			containers = append(containers, c.Name)
		}
	}
	if err := lab.DrainedFirst(j.output(), j.podName(alias), containers); err != nil {
		return "", err
	}
	return fmt.Sprintf("the gate drained before SIGTERM reached %s", strings.Join(containers, ", ")), nil
}

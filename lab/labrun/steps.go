package labrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/lab"
	"github.com/podgate/podgate/lab/load"
	"github.com/podgate/podgate/lab/scenario"
)

// runner is one scenario being run: its world, its timeline of marks,
// its load and what the steps bound and saw.
type runner struct {
	s    *scenario.Scenario
	w    lab.World
	tl   *lab.Timeline
	load *load.Load
	// loadStarted is when the load started; rec the load's recording
	// once it stopped.
	loadStarted time.Time
	rec         *load.Recording
	// pods are the pods bound by name.
	pods map[string]*boundPod
	// statuses are what the service's status said when the steps read
	// it.
	statuses []status
	// stopping is when podgate was told to stop: kills from then on are
	// the end of the run, not the scenario's.
	stopping time.Time
	// toggles are the toggles made, in order.
	toggles []toggled
	// onKnative: the run is on Knative Serving (RunKnative), where
	// nothing records routing decisions and a held request may time out
	// in Knative's activator or in the gate.
	onKnative bool
	// maxStep caps each step's timeout (Config.MaxStepTimeout).
	maxStep time.Duration
}

// toggled is one toggle made: of which pod, set to what, when.
type toggled struct {
	pod, kind string
	port      int
	set       bool
	at        time.Time
}

// boundPod is a pod a step bound to a name, and its containers' restart
// counts when it was bound or last toggled.
type boundPod struct {
	name, ip string
	restarts map[string]int32
}

// status is what the service's status said at an instant.
type status struct {
	at      time.Time
	state   string
	message string
}

// steps runs the steps in order until one fails, and judges them as
// one verdict: all done, or the one that failed. The load is stopped at
// the end either way.
func (r *runner) steps(ctx context.Context) Verdict {
	begun := time.Now()
	for i, st := range r.s.Steps {
		if err := r.step(ctx, i, st); err != nil {
			r.tl.Mark(fmt.Sprintf("step %d failed", i+1))
			r.stopLoad(10 * time.Second)
			return Verdict{Rule: fmt.Sprintf("step %d (%s)", i+1, stepWords(st)), Detail: err.Error()}
		}
	}
	if d := r.s.LoadDuration(); r.load != nil && d > 0 {
		// The load runs at least its duration.
		select {
		case <-time.After(time.Until(r.loadStarted.Add(d))):
		case <-ctx.Done():
		}
	}
	r.stopLoad(scenario.DefaultStepTimeout)
	return Verdict{Rule: fmt.Sprintf("steps: all %d done", len(r.s.Steps)), Pass: true, Detail: fmt.Sprintf("in %s", time.Since(begun).Round(100*time.Millisecond))}
}

// words names a step in a verdict.
func stepWords(st scenario.Step) string {
	switch {
	case st.Wait != nil:
		w, _ := json.Marshal(st.Wait)
		return "wait " + string(w)
	case st.Load != "":
		return "load: " + st.Load
	case st.Toggle != nil:
		return fmt.Sprintf("toggle %s of %s :%d set=%t", st.Toggle.Toggle, st.Toggle.Pod, st.Toggle.Port, st.Toggle.Set != nil && *st.Toggle.Set)
	case st.Delete != "":
		return "delete " + st.Delete
	case st.Mark != "":
		return "mark " + st.Mark
	}
	return "at " + st.At
}

func (r *runner) step(ctx context.Context, i int, st scenario.Step) error {
	if at := r.s.StepAt(i); at > 0 {
		select {
		case <-time.After(time.Until(r.tl.Origin().Add(at))):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	timeout := r.s.StepTimeout(i)
	if r.maxStep > 0 {
		timeout = min(timeout, r.maxStep)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	switch {
	case st.Wait != nil:
		err = r.wait(ctx, st.Wait)
	case st.Load == "start":
		err = r.startLoad()
	case st.Load == "stop":
		r.stopLoad(timeout)
	case st.Toggle != nil:
		err = r.toggle(ctx, st.Toggle)
	case st.Delete != "":
		err = r.w.DeletePod(ctx, r.w.Namespace(), r.pods[st.Delete].name, metav1.DeleteOptions{})
	}
	if err == nil && st.Mark != "" {
		r.tl.Mark(st.Mark)
	}
	return err
}

func (r *runner) startLoad() error {
	host := r.s.Load.Host
	if host == "" {
		host = r.w.Host(r.s.Load.Service)
	}
	l, err := load.Start(load.Config{URL: r.w.FrontDoorURL(), Host: host, Workers: r.s.Load.Workers, Rate: r.s.Load.Rate})
	if err != nil {
		return err
	}
	r.load, r.loadStarted = l, time.Now()
	return nil
}

// stopLoad stops the load, letting held requests finish within d; those
// still held then are cancelled, and recorded as failed.
func (r *runner) stopLoad(d time.Duration) {
	if r.load == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	r.rec = r.load.Stop(ctx)
	r.load = nil
}

// stop stops the world gracefully: podgate must exit 0, its front door
// having shut down cleanly.
func (r *runner) stop() Verdict {
	r.stopLoad(10 * time.Second)
	v := Verdict{Rule: "podgate stopped cleanly", Pass: true}
	r.stopping = time.Now()
	if err := r.w.Stop(scenario.DefaultStepTimeout); err != nil {
		v.Pass, v.Detail = false, err.Error()
	}
	return v
}

// mark is the instant of a mark made so far.
func (r *runner) mark(name string) (time.Time, bool) {
	for _, m := range r.tl.Marks() {
		if m.Name == name {
			return m.At, true
		}
	}
	return time.Time{}, false
}

// since is the instant of an optional mark (zero: the beginning).
func (r *runner) since(name string) time.Time {
	t, _ := r.mark(name)
	return t
}

func (r *runner) toggle(ctx context.Context, t *scenario.Toggle) error {
	bp := r.pods[t.Pod]
	// The restart counts a later `restarted` compares with.
	p, err := lab.WaitPod(ctx, r.w, "pod "+bp.name, lab.Named(bp.name, func(*corev1.Pod) error { return nil }))
	if err != nil {
		return err
	}
	bp.restarts = restarts(p)
	name := map[string]string{"ready": lab.ToggleReady, "live": lab.ToggleLive, "exec": lab.ToggleExec}[t.Toggle]
	at := time.Now()
	if err := r.w.PodHTTP().Toggle(ctx, bp.ip, t.Port, name, *t.Set); err != nil {
		return err
	}
	r.toggles = append(r.toggles, toggled{pod: bp.name, kind: t.Toggle, port: t.Port, set: *t.Set, at: at})
	return nil
}

func restarts(p *corev1.Pod) map[string]int32 {
	out := map[string]int32{}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			out[cs.Name] = cs.RestartCount
		}
	}
	return out
}

func (r *runner) bind(name string, p *corev1.Pod) {
	r.pods[name] = &boundPod{name: p.Name, ip: p.Status.PodIP, restarts: restarts(p)}
}

var states = map[string]lab.ServiceState{"serving": lab.Serving, "not-serving": lab.NotServing, "never-served": lab.NeverServed}

// wait waits for the one condition of w; long because it is one case
// per condition, each a call into the lab.
func (r *runner) wait(ctx context.Context, w *scenario.Wait) error {
	svc := r.s.Load.Service
	switch {
	case w.Service != "":
		if err := r.w.WaitService(ctx, svc, states[w.Service]); err != nil {
			return err
		}
		msg, _ := r.w.StatusMessage(ctx, svc)
		r.statuses = append(r.statuses, status{at: time.Now(), state: w.Service, message: msg})
		return nil
	case len(w.StatusSays) > 0:
		return r.waitStatus(ctx, w.StatusSays)
	case w.PodsReady > 0:
		return r.waitPods(ctx, w.PodsReady, w.As, "ready", lab.PodReady)
	case w.PodsRunning > 0:
		return r.waitPods(ctx, w.PodsRunning, w.As, "running", running)
	case w.Replacement != "":
		p, err := lab.WaitPod(ctx, r.w, "a ready replacement", func(p *corev1.Pod) error {
			for _, bp := range r.pods {
				if bp.name == p.Name {
					return errors.New("a pod bound before")
				}
			}
			return lab.PodReady(p)
		})
		if err == nil {
			r.bind(w.Replacement, p)
		}
		return err
	case w.PodReady != "":
		bp := r.pods[w.PodReady]
		p, err := lab.WaitPod(ctx, r.w, bp.name+" ready", lab.Named(bp.name, lab.PodReady))
		if err == nil {
			bp.ip = p.Status.PodIP
		}
		return err
	case w.Restarted != nil:
		bp := r.pods[w.Restarted.Pod]
		_, err := lab.WaitRestart(ctx, r.w, bp.name, w.Restarted.Container, bp.restarts[w.Restarted.Container])
		return err
	case w.Gone != "":
		return lab.WaitPodGone(ctx, r.w, r.pods[w.Gone].name)
	case w.Gate != nil:
		return r.waitGate(ctx, w.Gate)
	case w.For != "":
		return hold(ctx, w.For)
	}
	return r.waitLoad(ctx, w)
}

// hold waits d (checked when the scenario was read).
func hold(ctx context.Context, d string) error {
	dur, err := time.ParseDuration(d)
	if err != nil {
		return err
	}
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("holding %s: %w", d, ctx.Err())
	}
}

// running matches a running pod with an address, ready or not.
func running(p *corev1.Pod) error {
	if p.Status.PodIP == "" || p.Status.Phase != corev1.PodRunning {
		return fmt.Errorf("phase %s, IP %q", p.Status.Phase, p.Status.PodIP)
	}
	return nil
}

// waitPods waits for n pods that match (and are not being deleted) and
// binds the first of them, by name, to as.
func (r *runner) waitPods(ctx context.Context, n int, as []string, what string, match func(*corev1.Pod) error) error {
	var found []corev1.Pod
	err := lab.Poll(ctx, lab.PollInterval, fmt.Sprintf("%d %s pods", n, what), func(ctx context.Context) (bool, error) {
		list, err := r.w.ListPods(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		found = found[:0]
		var why []string
		for _, p := range list.Items {
			if err := match(&p); err != nil || p.DeletionTimestamp != nil {
				why = append(why, fmt.Sprintf("%s: %v", p.Name, err))
				continue
			}
			found = append(found, p)
		}
		return len(found) >= n, fmt.Errorf("%d of %d %s: %s", len(found), n, what, strings.Join(why, "; "))
	})
	if err != nil {
		return err
	}
	slices.SortFunc(found, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for i, name := range as {
		r.bind(name, &found[i])
	}
	return nil
}

// waitStatus polls the service's status until it says every word.
func (r *runner) waitStatus(ctx context.Context, words []string) error {
	svc := r.s.Load.Service
	return lab.Poll(ctx, lab.PollInterval, fmt.Sprintf("the status of %s saying %q", svc, words), func(ctx context.Context) (bool, error) {
		msg, err := r.w.StatusMessage(ctx, svc)
		if err != nil {
			return false, err
		}
		if n := len(r.statuses); n == 0 || r.statuses[n-1].message != msg {
			r.statuses = append(r.statuses, status{at: time.Now(), message: msg})
		}
		for _, w := range words {
			if !strings.Contains(msg, w) {
				return false, fmt.Errorf("status: %q", msg)
			}
		}
		return true, nil
	})
}

func (r *runner) waitGate(ctx context.Context, g *scenario.GateState) error {
	bp := r.pods[g.Pod]
	return lab.Poll(ctx, lab.PollInterval, fmt.Sprintf("the gate of %s: ready %v, not ready %v", bp.name, g.Ready, g.NotReady), func(ctx context.Context) (bool, error) {
		gr, err := r.w.PodHTTP().ReadGateReadiness(ctx, bp.ip)
		if err != nil {
			return false, err
		}
		for _, c := range g.Ready {
			if !gr.Containers[c] {
				return false, fmt.Errorf("gate readiness:\n%s", gr.Text)
			}
		}
		for _, c := range g.NotReady {
			if ready, named := gr.Containers[c]; ready || !named || gr.Ready {
				return false, fmt.Errorf("gate readiness:\n%s", gr.Text)
			}
		}
		return true, nil
	})
}

// waitLoad waits for a condition on the load's requests.
func (r *runner) waitLoad(ctx context.Context, w *scenario.Wait) error {
	began := time.Now()
	var what string
	var cond func(*load.Recording) bool
	switch {
	case w.Served > 0:
		what = fmt.Sprintf("%d requests served", w.Served)
		cond = func(rec *load.Recording) bool { return rec.ServedSince(began) >= w.Served }
	case w.ServedAfter != "":
		t := r.since(w.ServedAfter)
		what = fmt.Sprintf("a request sent after %q served", w.ServedAfter)
		cond = func(rec *load.Recording) bool { return rec.SucceededAfter(t) }
	case len(w.ServedBy) > 0:
		t := r.since(w.SentAfter)
		var names []string
		for _, a := range w.ServedBy {
			names = append(names, r.pods[a].name)
		}
		what = fmt.Sprintf("requests served by %v", names)
		cond = func(rec *load.Recording) bool {
			seen := map[string]bool{}
			for _, q := range rec.StartedBetween(t, time.Now().Add(time.Hour)) {
				if q.OK() {
					seen[strings.TrimSpace(q.Body)] = true
				}
			}
			for _, n := range names {
				if !seen[n] {
					return false
				}
			}
			return true
		}
	case w.Held:
		t, workers := r.since(w.SentAfter), r.s.Load.Workers
		if workers == 0 {
			workers = 4
		}
		what = "every worker held"
		cond = func(rec *load.Recording) bool { return len(rec.InFlightSince(t)) >= workers }
	case w.Answered != nil:
		a := w.Answered
		t := r.since(a.SentAfter)
		what = fmt.Sprintf("a request answered %d %q", a.Status, a.Body)
		cond = func(rec *load.Recording) bool {
			return slices.ContainsFunc(rec.WithStatus(a.Status, a.Body), func(q load.Request) bool { return !q.Start.Before(t) })
		}
	}
	_, err := r.load.Wait(ctx, what, cond)
	return err
}

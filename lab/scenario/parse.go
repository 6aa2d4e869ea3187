package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/podgate/podgate/internal/specdecode"
)

// DefaultStepTimeout bounds a step without a timeout of its own:
// generous, since scenarios run in parallel on loaded machines; a
// healthy run needs a small fraction of it.
const DefaultStepTimeout = 90 * time.Second

// MinWindow is the shortest window a noneServed or released rule judges:
// at the load's usual rates a shorter one holds a handful of requests at
// most, and a window between two states reached within milliseconds of
// each other passes whatever the gate does. A scenario holds its window
// open with a `wait: {for: …}` step.
const MinWindow = time.Second

// maxFile bounds a scenario file: a few kilobytes of YAML, manifests
// inline included.
const maxFile = 1 << 20

// InvalidError is a scenario file that cannot run: every problem, each
// with its field path.
type InvalidError struct {
	File string
	Errs field.ErrorList
}

func (e *InvalidError) Error() string {
	var b strings.Builder
	for i, err := range e.Errs {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s: %s", e.File, err.Error())
	}
	return b.String()
}

// Read reads and checks a scenario file.
func Read(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// ReadAll reads and checks every file before anything runs: a run does
// not start with a file that cannot.
func ReadAll(files []string) ([]*Scenario, error) {
	var out []*Scenario
	var errs []error
	names := map[string]string{}
	for _, f := range files {
		s, err := Read(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if other, dup := names[s.Name]; dup {
			errs = append(errs, fmt.Errorf("%s: name: %q is the name of %s too: their recordings would overwrite each other", f, s.Name, other))
			continue
		}
		names[s.Name] = f
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// Parse decodes a scenario strictly — unknown and duplicate fields,
// wrong types — and checks it: every problem is reported at once, each
// with its field path; file names the input in the errors and is where
// manifest paths are relative to.
func Parse(data []byte, file string) (*Scenario, error) {
	invalid := func(errs field.ErrorList) error { return &InvalidError{File: file, Errs: errs} }
	if len(data) > maxFile {
		return nil, invalid(field.ErrorList{field.TooLong(field.NewPath("<document>"), len(data), maxFile)})
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		// One line: the YAML library lists its errors on lines of their own.
		msg := strings.Join(strings.Fields(strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")), " ")
		msg = strings.ReplaceAll(msg, "yaml: unmarshal errors: ", "")
		return nil, invalid(field.ErrorList{field.Invalid(field.NewPath("<document>"), nil, "is not valid YAML: "+msg)})
	}
	if t := bytes.TrimSpace(js); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, invalid(field.ErrorList{field.Required(field.NewPath("<document>"), "the file is empty")})
	}
	s := &Scenario{File: file, Dir: filepath.Dir(file)}
	errs, ok := specdecode.Strict(js, s, nil)
	if !ok {
		return nil, invalid(errs)
	}
	errs = append(errs, s.check()...)
	if len(errs) > 0 {
		return nil, invalid(errs)
	}
	return s, nil
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// StepAt is how long after the scenario started step i may begin (0:
// at once).
func (s *Scenario) StepAt(i int) time.Duration { return s.timing[i].at }

// StepTimeout bounds step i: its timeout, or DefaultStepTimeout.
func (s *Scenario) StepTimeout(i int) time.Duration { return s.timing[i].timeout }

// LoadDuration is how long the load runs at least (0: until the steps
// are done).
func (s *Scenario) LoadDuration() time.Duration { return s.load.duration }

// stepTiming is a step's parsed durations.
type stepTiming struct {
	at, timeout time.Duration
}

type loadTiming struct {
	duration time.Duration
}

// checker follows what the steps bound and marked so far: a step may
// refer only to what came before it.
type checker struct {
	marks       map[string]bool
	pods        map[string]bool
	loadStarted bool
	loadStopped bool
}

// check validates the decoded file; long because it is one pass over
// the top-level fields, each a few lines.
func (s *Scenario) check() field.ErrorList {
	var errs field.ErrorList
	if s.APIVersion != APIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), s.APIVersion, []string{APIVersion}))
	}
	if s.Kind != Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), s.Kind, []string{Kind}))
	}
	errs = append(errs, checkName(field.NewPath("name"), s.Name)...)
	mp := field.NewPath("manifests")
	if len(s.Manifests) == 0 {
		errs = append(errs, field.Required(mp, "at least one manifest"))
	}
	for i, m := range s.Manifests {
		errs = append(errs, m.check(mp.Index(i))...)
	}
	if s.Replicas < 0 {
		errs = append(errs, field.Invalid(field.NewPath("replicas"), s.Replicas, "must not be negative"))
	}
	errs = append(errs, s.checkLoad(field.NewPath("load"))...)
	c := &checker{marks: map[string]bool{}, pods: map[string]bool{}}
	sp := field.NewPath("steps")
	if len(s.Steps) == 0 {
		errs = append(errs, field.Required(sp, "at least one step"))
	}
	s.timing = make([]stepTiming, len(s.Steps))
	for i := range s.Steps {
		errs = append(errs, s.checkStep(c, i, sp.Index(i))...)
	}
	if c.loadStarted && !c.loadStopped {
		c.loadStopped = true // the load stops after the last step
	}
	ep := field.NewPath("expect")
	if len(s.Expect) == 0 {
		errs = append(errs, field.Required(ep, "at least one expectation"))
	}
	for i, e := range s.Expect {
		errs = append(errs, e.check(c, ep.Index(i))...)
	}
	return errs
}

func checkName(p *field.Path, name string) field.ErrorList {
	switch {
	case name == "":
		return field.ErrorList{field.Required(p, "names the recording and the picture")}
	case len(name) > 63 || !nameRE.MatchString(name):
		return field.ErrorList{field.Invalid(p, name, "lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63")}
	}
	return nil
}

func (m Manifest) check(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case m.File == "" && m.Inline == "":
		errs = append(errs, field.Required(p, "file or inline"))
	case m.File != "" && m.Inline != "":
		errs = append(errs, field.Invalid(p, nil, "file and inline: give one"))
	}
	for i, r := range m.Replace {
		if r.Old == "" {
			errs = append(errs, field.Required(p.Child("replace").Index(i).Child("old"), ""))
		}
	}
	for i, a := range m.Args {
		ap := p.Child("args").Index(i)
		if a.Container == "" {
			errs = append(errs, field.Required(ap.Child("container"), ""))
		}
		if len(a.Append) == 0 {
			errs = append(errs, field.Required(ap.Child("append"), "the arguments to append"))
		}
	}
	if m.Set != nil {
		sp := p.Child("set")
		if v := m.Set.TerminationGracePeriodSeconds; v != nil && *v < 0 {
			errs = append(errs, field.Invalid(sp.Child("terminationGracePeriodSeconds"), *v, "must not be negative"))
		}
		if v := m.Set.TimeoutSeconds; v != nil && *v <= 0 {
			errs = append(errs, field.Invalid(sp.Child("timeoutSeconds"), *v, "must be positive"))
		}
	}
	return errs
}

func (s *Scenario) checkLoad(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	l := s.Load
	if l.Service == "" {
		errs = append(errs, field.Required(p.Child("service"), "the workload the requests are for"))
	} else if !nameRE.MatchString(l.Service) {
		errs = append(errs, field.Invalid(p.Child("service"), l.Service, "a workload's name"))
	}
	if l.Rate < 0 || l.Rate > 10000 {
		errs = append(errs, field.Invalid(p.Child("rate"), l.Rate, "requests per second, 0 (the default, 100) to 10000"))
	}
	if l.Workers < 0 || l.Workers > 256 {
		errs = append(errs, field.Invalid(p.Child("workers"), l.Workers, "0 (the default, 4) to 256"))
	}
	var err *field.Error
	s.load.duration, err = duration(p.Child("duration"), l.Duration)
	if err != nil {
		errs = append(errs, err)
	}
	return errs
}

// duration parses an optional duration field ("" is 0).
func duration(p *field.Path, v string) (time.Duration, *field.Error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, field.Invalid(p, v, "a duration such as 500ms, 10s or 2m")
	}
	return d, nil
}

// checkStep checks one step and records what it binds and marks.
func (s *Scenario) checkStep(c *checker, i int, p *field.Path) field.ErrorList {
	st := s.Steps[i]
	var errs field.ErrorList
	at, err := duration(p.Child("at"), st.At)
	if err != nil {
		errs = append(errs, err)
	}
	timeout, err := duration(p.Child("timeout"), st.Timeout)
	if err != nil {
		errs = append(errs, err)
	}
	if st.Timeout != "" && timeout == 0 && err == nil {
		errs = append(errs, field.Invalid(p.Child("timeout"), st.Timeout, "must be positive"))
	}
	if timeout == 0 {
		timeout = DefaultStepTimeout
	}
	s.timing[i] = stepTiming{at: at, timeout: timeout}
	if st.Wait != nil && st.Wait.For != "" {
		if d, err := time.ParseDuration(st.Wait.For); err == nil && d >= timeout {
			errs = append(errs, field.Invalid(p.Child("wait", "for"), st.Wait.For,
				fmt.Sprintf("must be shorter than the step's timeout (%s)", timeout)))
		}
	}
	var actions []string
	for name, set := range map[string]bool{"wait": st.Wait != nil, "load": st.Load != "", "toggle": st.Toggle != nil, "delete": st.Delete != ""} {
		if set {
			actions = append(actions, name)
		}
	}
	slices.Sort(actions)
	switch {
	case len(actions) > 1:
		errs = append(errs, field.Invalid(p, strings.Join(actions, ", "), "a step does one thing: wait, load, toggle or delete"))
	case len(actions) == 0 && st.Mark == "" && st.At == "":
		errs = append(errs, field.Required(p, "wait, load, toggle or delete; or a mark or a time (at) alone"))
	}
	switch {
	case st.Wait != nil:
		errs = append(errs, st.Wait.check(c, p.Child("wait"))...)
	case st.Load != "":
		errs = append(errs, c.checkLoadStep(p.Child("load"), st.Load)...)
	case st.Toggle != nil:
		errs = append(errs, st.Toggle.check(c, p.Child("toggle"))...)
	case st.Delete != "":
		errs = append(errs, c.pod(p.Child("delete"), st.Delete)...)
	}
	if st.Mark != "" {
		if c.marks[st.Mark] {
			errs = append(errs, field.Duplicate(p.Child("mark"), st.Mark))
		}
		c.marks[st.Mark] = true
	}
	return errs
}

func (c *checker) checkLoadStep(p *field.Path, v string) field.ErrorList {
	switch {
	case v != "start" && v != "stop":
		return field.ErrorList{field.NotSupported(p, v, []string{"start", "stop"})}
	case v == "start" && c.loadStarted:
		return field.ErrorList{field.Invalid(p, v, "the load was started already")}
	case v == "stop" && !c.loadStarted:
		return field.ErrorList{field.Invalid(p, v, "the load was not started")}
	case v == "stop" && c.loadStopped:
		return field.ErrorList{field.Invalid(p, v, "the load was stopped already")}
	}
	if v == "start" {
		c.loadStarted = true
	} else {
		c.loadStopped = true
	}
	return nil
}

// mark checks a reference to a mark made before.
func (c *checker) mark(p *field.Path, name string) field.ErrorList {
	if name != "" && !c.marks[name] {
		return field.ErrorList{field.NotFound(p, name)}
	}
	return nil
}

// pod checks a reference to a pod bound before.
func (c *checker) pod(p *field.Path, name string) field.ErrorList {
	if !c.pods[name] {
		return field.ErrorList{field.Invalid(p, name, "no pod was bound to this name by an earlier wait's as or replacement")}
	}
	return nil
}

func (c *checker) bind(p *field.Path, name string) field.ErrorList {
	var errs field.ErrorList
	if !nameRE.MatchString(name) {
		errs = append(errs, field.Invalid(p, name, "a name: lower-case letters, digits and '-'"))
	}
	if c.pods[name] {
		errs = append(errs, field.Duplicate(p, name))
	}
	c.pods[name] = true
	return errs
}

// needsLoad is the error of a wait on requests while no load runs.
func (c *checker) needsLoad(p *field.Path) field.ErrorList {
	if !c.loadStarted || c.loadStopped {
		return field.ErrorList{field.Invalid(p, nil, "waits on the load's requests: only between load: start and load: stop")}
	}
	return nil
}

var serviceStates = []string{"serving", "not-serving", "never-served"}

// check checks a wait; long because it is one case per condition.
func (w *Wait) check(c *checker, p *field.Path) field.ErrorList {
	set := map[string]bool{
		"service": w.Service != "", "statusSays": len(w.StatusSays) > 0, "podsReady": w.PodsReady != 0,
		"podsRunning": w.PodsRunning != 0, "replacement": w.Replacement != "", "podReady": w.PodReady != "",
		"restarted": w.Restarted != nil, "gone": w.Gone != "", "gate": w.Gate != nil, "served": w.Served != 0,
		"servedAfter": w.ServedAfter != "", "servedBy": len(w.ServedBy) > 0, "held": w.Held, "answered": w.Answered != nil,
		"for": w.For != "",
	}
	var conds []string
	for k, v := range set {
		if v {
			conds = append(conds, k)
		}
	}
	slices.Sort(conds)
	if len(conds) != 1 {
		return field.ErrorList{field.Invalid(p, strings.Join(conds, ", "), "a wait waits for exactly one condition")}
	}
	var errs field.ErrorList
	if len(w.As) > 0 && !set["podsReady"] && !set["podsRunning"] {
		errs = append(errs, field.Forbidden(p.Child("as"), "binds the pods of podsReady or podsRunning"))
	}
	if w.SentAfter != "" && !set["servedBy"] && !set["held"] {
		errs = append(errs, field.Forbidden(p.Child("sentAfter"), "goes with servedBy or held (answered has its own)"))
	}
	errs = append(errs, c.mark(p.Child("sentAfter"), w.SentAfter)...)
	switch conds[0] {
	case "service":
		if !slices.Contains(serviceStates, w.Service) {
			errs = append(errs, field.NotSupported(p.Child("service"), w.Service, serviceStates))
		}
	case "podsReady", "podsRunning":
		n, np := w.PodsReady, p.Child("podsReady")
		if set["podsRunning"] {
			n, np = w.PodsRunning, p.Child("podsRunning")
		}
		if n < 0 {
			errs = append(errs, field.Invalid(np, n, "must be positive"))
		}
		if len(w.As) > n {
			errs = append(errs, field.TooMany(p.Child("as"), len(w.As), n))
		}
		for i, a := range w.As {
			errs = append(errs, c.bind(p.Child("as").Index(i), a)...)
		}
	case "replacement":
		errs = append(errs, c.bind(p.Child("replacement"), w.Replacement)...)
	case "podReady":
		errs = append(errs, c.pod(p.Child("podReady"), w.PodReady)...)
	case "gone":
		errs = append(errs, c.pod(p.Child("gone"), w.Gone)...)
	case "restarted":
		errs = append(errs, c.pod(p.Child("restarted", "pod"), w.Restarted.Pod)...)
		if w.Restarted.Container == "" {
			errs = append(errs, field.Required(p.Child("restarted", "container"), ""))
		}
	case "gate":
		errs = append(errs, c.pod(p.Child("gate", "pod"), w.Gate.Pod)...)
		if len(w.Gate.Ready)+len(w.Gate.NotReady) == 0 {
			errs = append(errs, field.Required(p.Child("gate"), "ready or notReady: the containers the gate should name"))
		}
	case "served":
		if w.Served < 0 {
			errs = append(errs, field.Invalid(p.Child("served"), w.Served, "must be positive"))
		}
		errs = append(errs, c.needsLoad(p.Child("served"))...)
	case "servedAfter":
		errs = append(errs, c.mark(p.Child("servedAfter"), w.ServedAfter)...)
		errs = append(errs, c.needsLoad(p.Child("servedAfter"))...)
	case "servedBy":
		for i, pod := range w.ServedBy {
			errs = append(errs, c.pod(p.Child("servedBy").Index(i), pod)...)
		}
		errs = append(errs, c.needsLoad(p.Child("servedBy"))...)
	case "held":
		errs = append(errs, c.needsLoad(p.Child("held"))...)
	case "answered":
		errs = append(errs, w.Answered.check(c, p.Child("answered"))...)
		errs = append(errs, c.needsLoad(p.Child("answered"))...)
	case "for":
		if d, err := duration(p.Child("for"), w.For); err != nil {
			errs = append(errs, err)
		} else if d == 0 {
			errs = append(errs, field.Invalid(p.Child("for"), w.For, "must be positive"))
		}
	}
	return errs
}

func (a *Answer) check(c *checker, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if a.Status < 100 || a.Status > 599 {
		errs = append(errs, field.Invalid(p.Child("status"), a.Status, "an HTTP status code, 100 to 599"))
	}
	return append(errs, c.mark(p.Child("sentAfter"), a.SentAfter)...)
}

var toggles = []string{"ready", "live", "exec"}

func (t *Toggle) check(c *checker, p *field.Path) field.ErrorList {
	errs := c.pod(p.Child("pod"), t.Pod)
	if t.Port < 1 || t.Port > 65535 {
		errs = append(errs, field.Invalid(p.Child("port"), t.Port, "the test app's port in the pod, 1 to 65535"))
	}
	if !slices.Contains(toggles, t.Toggle) {
		errs = append(errs, field.NotSupported(p.Child("toggle"), t.Toggle, toggles))
	}
	if t.Set == nil {
		errs = append(errs, field.Required(p.Child("set"), "false fails the probe, true passes it"))
	}
	return errs
}

// check checks an expectation against every mark and pod of the steps;
// long because it is one case per rule.
func (e Expectation) check(c *checker, p *field.Path) field.ErrorList {
	set := map[string]bool{
		"failed": e.Failed != nil, "failedOnly": e.FailedOnly != nil, "answered": e.Answered != nil,
		"noneServed": e.NoneServed != nil, "released": e.Released != nil, "servedAfter": e.ServedAfter != "",
		"statusSays": len(e.StatusSays) > 0, "noTrafficTo": e.NoTrafficTo != nil,
		"requestsSentToKilledPod": e.RequestsSentToKilledPod != nil, "event": e.Event != nil, "drainedFirst": e.DrainedFirst != "",
	}
	var rules []string
	for k, v := range set {
		if v {
			rules = append(rules, k)
		}
	}
	slices.Sort(rules)
	if len(rules) != 1 {
		return field.ErrorList{field.Invalid(p, strings.Join(rules, ", "), "an expectation is exactly one rule")}
	}
	var errs field.ErrorList
	switch rules[0] {
	case "failed":
		if *e.Failed < 0 {
			errs = append(errs, field.Invalid(p.Child("failed"), *e.Failed, "must not be negative"))
		}
	case "requestsSentToKilledPod":
		if *e.RequestsSentToKilledPod < 0 {
			errs = append(errs, field.Invalid(p.Child("requestsSentToKilledPod"), *e.RequestsSentToKilledPod, "must not be negative"))
		}
	case "failedOnly":
		errs = append(errs, e.FailedOnly.check(c, p.Child("failedOnly"))...)
	case "answered":
		errs = append(errs, e.Answered.check(c, p.Child("answered"))...)
	case "noneServed", "released":
		w, wp := e.NoneServed, p.Child("noneServed")
		if w == nil {
			w, wp = e.Released, p.Child("released")
		}
		errs = append(errs, c.mark(wp.Child("from"), w.From)...)
		errs = append(errs, c.mark(wp.Child("to"), w.To)...)
		if e.Released != nil && w.To == "" {
			errs = append(errs, field.Required(wp.Child("to"), "the mark the requests were held across"))
		}
		if w.By != "" {
			if e.Released != nil {
				errs = append(errs, field.Forbidden(wp.Child("by"), "goes with noneServed"))
			} else {
				errs = append(errs, c.pod(wp.Child("by"), w.By)...)
			}
		}
	case "servedAfter":
		errs = append(errs, c.mark(p.Child("servedAfter"), e.ServedAfter)...)
	case "noTrafficTo":
		errs = append(errs, c.pod(p.Child("noTrafficTo", "pod"), e.NoTrafficTo.Pod)...)
	case "event":
		if e.Event.Reason == "" {
			errs = append(errs, field.Required(p.Child("event", "reason"), ""))
		}
		if e.Event.Pod != "" {
			errs = append(errs, c.pod(p.Child("event", "pod"), e.Event.Pod)...)
		}
	case "drainedFirst":
		errs = append(errs, c.pod(p.Child("drainedFirst"), e.DrainedFirst)...)
	}
	return errs
}

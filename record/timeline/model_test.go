package timeline

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podgate/podgate/record"
	"github.com/podgate/podgate/record/timeline/internal/fixtures"
)

func TestRequestClassIsWhatTheClientMet(t *testing.T) {
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"a 200 from a pod", Request{Pod: "p", Status: 200}, Class2xx},
		{"a redirect is served", Request{Pod: "p", Status: 302}, Class2xx},
		{"a 404 of the app", Request{Pod: "p", Status: 404}, Class4xx},
		{"a 500 of the app", Request{Pod: "p", Status: 500}, Class5xx},
		{"a 502 with the dial's error is an error", Request{Pod: "p", Status: 502, Error: "connection refused"}, ClassError},
		{"no answer at all", Request{Pod: "p", Error: "EOF"}, ClassError},
		{"the client went away", Request{Pod: "p", Status: 499}, ClassError},
		{"held until it gave up", Request{Status: 503, Held: time.Second, TimedOut: true}, ClassHeld},
		{"held, then served", Request{Pod: "p", Status: 200, Held: time.Second}, Class2xx},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.req.Class(); got != tt.want {
				t.Errorf("class %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEndpointStateReadsConditionsAsKubernetes(t *testing.T) {
	tr, fa := fixtures.Bool(true), fixtures.Bool(false)
	tests := []struct {
		name string
		e    record.Endpoint
		want string
	}{
		{"nothing set is ready", record.Endpoint{}, "ready"},
		{"ready", record.Endpoint{Ready: tr, Serving: tr, Terminating: fa}, "ready"},
		{"not ready", record.Endpoint{Ready: fa, Serving: fa, Terminating: fa}, "not-ready"},
		{"not ready, serving unset follows ready", record.Endpoint{Ready: fa}, "not-ready"},
		{"terminating and still serving", record.Endpoint{Ready: fa, Serving: tr, Terminating: tr}, "serving"},
		{"terminating", record.Endpoint{Ready: fa, Serving: fa, Terminating: tr}, "terminating"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EndpointState(tt.e); got != tt.want {
				t.Errorf("%q, want %q", got, tt.want)
			}
		})
	}
}

func TestOptionsRefuseRangesThatAreNot(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"everything", Options{}, ""},
		{"a window", Options{From: time.Second, To: 2 * time.Second, Interval: time.Millisecond}, ""},
		{"negative from", Options{From: -time.Second}, "--from -1s: must not be negative"},
		{"negative to", Options{To: -time.Second}, "--to -1s: must not be negative"},
		{"to before from", Options{From: 2 * time.Second, To: time.Second}, "--to 1s must be after --from 2s"},
		{"negative interval", Options{Interval: -time.Second}, "--interval -1s: must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Check()
			if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestKillWindowRunsFromNotReadyToReadyAgain(t *testing.T) {
	tests := []struct {
		name     string
		scenario *fixtures.Scenario
		from, to time.Time
	}{
		// The gate took the pod out at the first liveness failure.
		{"gated: from not ready, before the kill", fixtures.LivenessRestart(), fixtures.At(10.02), fixtures.At(22.02)},
		// Without it the pod was Ready when killed.
		{"ungated: from the kill", fixtures.KubernetesRestart(), fixtures.At(20), fixtures.At(25.01)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, facts := tt.scenario.RoundTrip(t, "")
			m, err := Build(h, facts, Options{})
			if err != nil {
				t.Fatal(err)
			}
			kills := m.Pods[0].Kills
			if len(kills) != 1 {
				t.Fatalf("kills %+v, want the one", kills)
			}
			if k := kills[0]; !k.At.Equal(fixtures.At(20)) || !k.From.Equal(tt.from) || !k.To.Equal(tt.to) || k.Container != "app" {
				t.Errorf("kill %+v, want at +20s of app, window %s–%s", k, m.Rel(tt.from), m.Rel(tt.to))
			}
		})
	}
}

// Two watches of one API see a write at instants apart: where the
// endpoints' watch saw a change of the pod's readiness before the pods'
// watch, the pod changed then. A request released the moment the front
// door saw the endpoint ready is not sent to a pod not ready yet.
func TestReadinessChangesWhenTheEndpointShowedItFirst(t *testing.T) {
	s := &fixtures.Scenario{}
	s.StartPod(0, "web-a", "10.244.0.2", false) // the condition before the endpoint
	s.Endpoint(10.000, "web-a", "10.244.0.2", false, false)
	s.Cond(10.004, "web-a", "Ready", "False", "ContainersNotReady")
	s.Event(10.005, "web-a", "app", "Killing", "Container app failed liveness probe, will be restarted")
	s.State(11, "web-a", "app", "running", "", false, 1, "web-a-app-1")
	s.Endpoint(12.000, "web-a", "10.244.0.2", true, false)
	s.Request(12.001, "web-a", 200, "", time.Second, false)
	s.Cond(12.003, "web-a", "Ready", "True", "")
	h, facts := s.RoundTrip(t, "")
	m, err := Build(h, facts, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := m.Pods[0]
	var spans []string
	for _, sp := range p.Ready {
		spans = append(spans, fmt.Sprintf("%s from %s", sp.State, m.Rel(sp.From)))
	}
	want := "not-ready from +00:00.000, ready from +00:01.020, not-ready from +00:10.000, ready from +00:12.000"
	if got := strings.Join(spans, ", "); got != want {
		t.Errorf("ready spans: %s\nwant:        %s", got, want)
	}
	if k := p.Kills; len(k) != 1 || !k[0].From.Equal(fixtures.At(10)) || !k[0].To.Equal(fixtures.At(12)) {
		t.Errorf("kills %+v, want one with the window +10s–+12s", k)
	}
	if p.NotReadyAt(fixtures.At(12.001)) {
		t.Error("the request released at +12.001s counts as sent to a pod not ready")
	}
}

// The node agent records its probe attempts as they come and writes the
// status from them, which the recording sees later, through a watch: a
// pod is ready again at the attempt that made it so, unless something
// else that holds its readiness (the gate's verdict) turned ready after.
// A request sent after that attempt is not sent to a pod not ready; one
// sent before it is.
func TestReadyAgainAtTheProbeThatMadeIt(t *testing.T) {
	tests := []struct {
		name      string
		gateLater bool
		readyAt   float64
		counted   string
	}{
		{"the probe passed last", false, 11.999, "+00:10.002"},
		{"the gate's verdict came after the probe", true, 12.002, "+00:10.002,+00:12.000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &fixtures.Scenario{}
			s.StartPod(0, "web-a", "10.244.0.2", false)
			probe := func(sec float64, result, state string) {
				s.Add(sec, record.Fact{Kind: record.KindProbe, Pod: "web-a", Container: "app",
					Probe: &record.Probe{Probe: "readiness", Result: result, State: state}})
			}
			probe(10.000, "failure", "failure")
			s.Cond(10.001, "web-a", "Ready", "False", "ContainersNotReady")
			s.Endpoint(10.0015, "web-a", "10.244.0.2", false, false)
			s.Request(10.002, "web-a", 200, "", 0, false) // sent while not ready
			probe(11.999, "success", "success")
			if tt.gateLater {
				s.Gate(11.9995, "web-a", false, "app not ready")
				s.Gate(12.001, "web-a", true, "")
			}
			s.Request(12.000, "web-a", 200, "", 1500*time.Millisecond, false)
			s.Endpoint(12.002, "web-a", "10.244.0.2", true, false)
			s.Cond(12.003, "web-a", "Ready", "True", "")
			h, facts := s.RoundTrip(t, "")
			m, err := Build(h, facts, Options{})
			if err != nil {
				t.Fatal(err)
			}
			p := m.Pods[0]
			if got := p.Ready[len(p.Ready)-1].From; !got.Equal(fixtures.At(tt.readyAt)) {
				t.Errorf("ready again from %s, want %s", m.Rel(got), m.Rel(fixtures.At(tt.readyAt)))
			}
			var counted []string
			for _, r := range p.Requests {
				if p.NotReadyAt(r.Sent) {
					counted = append(counted, m.Rel(r.Sent))
				}
			}
			if strings.Join(counted, ",") != tt.counted {
				t.Errorf("requests sent while not ready: %v, want %s", counted, tt.counted)
			}
		})
	}
}

func TestKillsComeFromRestartFlagsWithoutEvents(t *testing.T) {
	s := &fixtures.Scenario{}
	s.StartPod(0, "web-a", "10.244.0.2", false)
	s.Probe(5, "web-a", "app", "liveness", "failure", fixtures.Liveness500, true)
	s.State(6, "web-a", "app", "running", "", false, 1, "web-a-app-1")
	h, facts := s.RoundTrip(t, "")
	m, err := Build(h, facts, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if k := m.Pods[0].Kills; len(k) != 1 || !k[0].At.Equal(fixtures.At(5)) {
		t.Errorf("kills %+v, want one at +5s from the probe's restart", k)
	}
	var states []string
	for _, sp := range m.Pods[0].Containers[0].Spans {
		states = append(states, sp.State)
	}
	if strings.Join(states, ",") != "waiting,running,ready,killing,running" {
		t.Errorf("spans %v", states)
	}
}

func TestParseReadsUpToACutLastLine(t *testing.T) {
	h, facts := fixtures.LivenessRestart().RoundTrip(t, "")
	var buf bytes.Buffer
	w, err := record.NewWriter(&buf, h, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range facts {
		w.Record(f)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	whole := buf.Bytes()
	lines := bytes.Count(whole, []byte("\n"))
	tests := []struct {
		name      string
		data      []byte
		facts     int
		warning   string
		errSubstr string
	}{
		{"whole", whole, len(facts), "", ""},
		{"killed mid-line", whole[:len(whole)-10], len(facts) - 1, "last line (" + strconv.Itoa(lines) + ") is cut short", ""},
		{"a bad line in the middle", bytes.Replace(whole, []byte(`"kind":"probe"`), []byte(`"kind":"probe`), 1), 0, "", "recording line"},
		{"not a recording", []byte("hello\n"), 0, "", "recording line 1"},
		{"empty", nil, 0, "", "recording is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got, warning, err := Parse(tt.data)
			if tt.errSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errSubstr) {
					t.Fatalf("err %v, want one with %q", err, tt.errSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.facts || !strings.Contains(warning, tt.warning) || (tt.warning == "") != (warning == "") {
				t.Errorf("%d facts, warning %q; want %d and %q", len(got), warning, tt.facts, tt.warning)
			}
		})
	}
}

func TestBuildRefusesARecordingWithNothing(t *testing.T) {
	if _, err := Build(record.Header{}, nil, Options{}); !errors.Is(err, ErrNoFacts) {
		t.Errorf("err %v, want ErrNoFacts", err)
	}
}

package labrun

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/podgate/podgate/lab"
	"github.com/podgate/podgate/lab/load"
	"github.com/podgate/podgate/lab/scenario"
	"github.com/podgate/podgate/record"
	"github.com/podgate/podgate/record/timeline"
)

// world is a run to judge, made by hand: its marks (made now, the facts
// placed around them), the load's requests and the recording's facts.
type world struct {
	t     *testing.T
	r     *runner
	facts []record.Fact
	t0    time.Time
}

func newWorld(t *testing.T) *world {
	w := &world{t: t, r: &runner{s: &scenario.Scenario{}, tl: lab.NewTimeline(), pods: map[string]*boundPod{}, rec: &load.Recording{}}}
	w.t0 = w.r.tl.Origin()
	return w
}

// at is t0 plus sec seconds, rounded to the nanosecond: truncating would
// place a request made at a mark's seconds (mark) a nanosecond before it.
func (w *world) at(sec float64) time.Time {
	return w.t0.Add(time.Duration(math.Round(sec * float64(time.Second))))
}

// mark makes a mark and returns the seconds since t0 it was made at.
func (w *world) mark(name string) float64 { return w.r.tl.Mark(name).Sub(w.t0).Seconds() }

// markAt makes a mark at sec seconds after t0.
func (w *world) markAt(name string, sec float64) { w.r.tl.MarkAt(name, w.at(sec)) }

// req is a request the load saw: sent at sec, lasting dur seconds.
func (w *world) req(sec, dur float64, status int, body string) {
	w.r.rec.Requests = append(w.r.rec.Requests, load.Request{Start: w.at(sec), Duration: time.Duration(dur * float64(time.Second)), Status: status, Body: body})
}

func (w *world) fact(sec float64, f record.Fact) {
	f.Time = w.at(sec)
	if f.Pod != "" {
		f.Namespace = "default"
	}
	w.facts = append(w.facts, f)
}

// readyPod is pod web, ready from +1s, its endpoint too, bound to "pod".
func (w *world) readyPod() {
	w.r.pods["pod"] = &boundPod{name: "web"}
	w.fact(0, record.Fact{Kind: record.KindContainer, Pod: "web", Container: "app", State: &record.State{State: "running", ContainerID: "c1"}})
	w.fact(1, record.Fact{Kind: record.KindContainer, Pod: "web", Container: "app", State: &record.State{State: "running", Ready: true, ContainerID: "c1"}})
	w.ready(1, true)
}

func (w *world) ready(sec float64, ready bool) {
	status := map[bool]string{true: "True", false: "False"}[ready]
	w.fact(sec, record.Fact{Kind: record.KindCondition, Pod: "web", Condition: &record.Condition{Type: "Ready", Status: status}})
	w.fact(sec+0.001, record.Fact{Kind: record.KindEndpoint, Pod: "web", Endpoint: &record.Endpoint{Service: "web", Slice: "web", Address: "127.0.0.2", Ready: &ready}})
}

// route is one request through the front door: held from heldSec (when
// not negative), sent to pod ("" for none) at sec, ending 10 ms later.
func (w *world) route(id uint64, heldSec, sec float64, pod string, status int) {
	if heldSec >= 0 {
		w.fact(heldSec, record.Fact{Kind: record.KindRoute, Route: &record.Route{Target: "default/web", Decision: record.DecisionHeld, Request: id}})
	}
	decision := record.DecisionRouted
	if heldSec >= 0 {
		decision = record.DecisionReleased
	}
	w.fact(sec, record.Fact{Kind: record.KindRoute, Pod: pod, Route: &record.Route{Target: "default/web", Decision: decision, Request: id}})
	start := sec
	if heldSec >= 0 {
		start = heldSec
	}
	w.fact(sec+0.01, record.Fact{Kind: record.KindRequest, Pod: pod, Request: &record.Request{ID: id, Target: "default/web", Start: w.at(start), Status: status, Latency: w.at(sec + 0.01).Sub(w.at(start))}})
}

// answer is a request as a client saw it, with no routing decision: sent
// at sec, answered by pod web at end.
func (w *world) answer(id uint64, sec, end float64) {
	w.fact(end, record.Fact{Kind: record.KindRequest, Pod: "web", Request: &record.Request{ID: id, Target: "default/web", Start: w.at(sec), Status: 200, Latency: w.at(end).Sub(w.at(sec))}})
}

func (w *world) judge() *judge {
	w.t.Helper()
	m, err := timeline.Build(record.Header{Started: w.t0}, w.facts, timeline.Options{})
	if err != nil {
		w.t.Fatal(err)
	}
	return &judge{r: w.r, m: m, namespace: "default", output: func() string { return "" }}
}

func intp(n int) *int { return &n }

// Each rule passes or fails on the numbers, and says which, when and how
// many.
func TestRulesJudgeTheRunAndSayWhy(t *testing.T) {
	tests := []struct {
		name  string
		setup func(w *world) scenario.Expectation
		pass  bool
		words []string
	}{
		{"failed: none failed", func(w *world) scenario.Expectation {
			w.req(0, 0.01, 200, "web")
			return scenario.Expectation{Failed: intp(0)}
		}, true, []string{"0 of 1 requests failed"}},
		{"failed: a 502 is one too many", func(w *world) scenario.Expectation {
			w.req(0, 0.01, 200, "web")
			w.req(1, 0.01, 502, "bad gateway")
			return scenario.Expectation{Failed: intp(0)}
		}, false, []string{"1 of 2 requests failed, want at most 0", `502 "bad gateway"`}},
		{"failedOnly: timeouts after the mark", func(w *world) scenario.Expectation {
			off := w.mark("off")
			w.req(off+0.1, 3, 504, "activator request timeout")
			return scenario.Expectation{FailedOnly: &scenario.Answer{Status: 504, Body: "activator request timeout", SentAfter: "off"}}
		}, true, []string{"1 of 1 requests failed, each so"}},
		{"failedOnly on Knative: the gate's 504 request timeout is the held request's timeout too", func(w *world) scenario.Expectation {
			w.r.onKnative = true
			off := w.mark("off")
			w.req(off+0.1, 3, 504, "activator request timeout")
			w.req(off+0.2, 3, 504, "request timeout")
			return scenario.Expectation{FailedOnly: &scenario.Answer{Status: 504, Body: "activator request timeout", SentAfter: "off"}}
		}, true, []string{"2 of 2 requests failed, each so"}},
		{"failedOnly under podgate run: the gate's 504 is something else", func(w *world) scenario.Expectation {
			off := w.mark("off")
			w.req(off+0.2, 3, 504, "request timeout")
			return scenario.Expectation{FailedOnly: &scenario.Answer{Status: 504, Body: "activator request timeout", SentAfter: "off"}}
		}, false, []string{"1 of 1 failed requests were something else"}},
		{"failedOnly: a timeout before the mark is something else", func(w *world) scenario.Expectation {
			w.req(-1, 3, 504, "activator request timeout")
			w.mark("off")
			return scenario.Expectation{FailedOnly: &scenario.Answer{Status: 504, Body: "activator request timeout", SentAfter: "off"}}
		}, false, []string{"1 of 1 failed requests were something else"}},
		{"noneServed: held across the window", func(w *world) scenario.Expectation {
			w.markAt("out", 1)
			w.req(1, 3, 200, "web") // ends after "back"
			w.markAt("back", 3)
			return scenario.Expectation{NoneServed: &scenario.Window{From: "out", To: "back"}}
		}, true, []string{"1 requests were sent in it; none was served before its end"}},
		{"noneServed: one served inside", func(w *world) scenario.Expectation {
			w.markAt("out", 1)
			w.req(1, 0, 200, "web")
			w.markAt("back", 3)
			return scenario.Expectation{NoneServed: &scenario.Window{From: "out", To: "back"}}
		}, false, []string{"1 requests sent in it were served before its end, want none"}},
		{"noneServed: a window too short judges nothing", func(w *world) scenario.Expectation {
			w.markAt("out", 1)
			w.markAt("back", 1.028)
			return scenario.Expectation{NoneServed: &scenario.Window{From: "out", To: "back"}}
		}, false, []string{"the window lasted 28ms, too short to show anything (at least 1s"}},
		{"noneServed by a pod: the other pod's answers do not count", func(w *world) scenario.Expectation {
			w.r.pods["pod"] = &boundPod{name: "web-1"}
			w.markAt("out", 1)
			w.req(1.5, 0.01, 200, "web-2")
			w.markAt("back", 3)
			return scenario.Expectation{NoneServed: &scenario.Window{From: "out", To: "back", By: "pod"}}
		}, true, []string{"1 requests were sent in it; none was served by web-1 before its end"}},
		{"noneServed by a pod: its own answer counts", func(w *world) scenario.Expectation {
			w.r.pods["pod"] = &boundPod{name: "web-1"}
			w.markAt("out", 1)
			w.req(1.5, 0.01, 200, "web-2")
			w.req(2, 0.01, 200, "web-1")
			w.markAt("back", 3)
			return scenario.Expectation{NoneServed: &scenario.Window{From: "out", To: "back", By: "pod"}}
		}, false, []string{"1 requests sent in it were served by web-1 before its end, want none"}},
		{"released: held across the end, then served", func(w *world) scenario.Expectation {
			w.markAt("out", 1)
			w.req(1, 4, 200, "web")
			w.markAt("back", 3)
			return scenario.Expectation{Released: &scenario.Window{From: "out", To: "back"}}
		}, true, []string{"1 requests sent in it were held across its end and then served; the longest held 4s"}},
		{"released: none held", func(w *world) scenario.Expectation {
			w.markAt("out", 1)
			w.markAt("back", 3)
			return scenario.Expectation{Released: &scenario.Window{From: "out", To: "back"}}
		}, false, []string{"no request sent in it was held across its end and then served (0 sent in it)"}},
		{"released: a window too short judges nothing", func(w *world) scenario.Expectation {
			w.markAt("out", 1)
			w.req(1, 4, 200, "web")
			w.markAt("back", 1.5)
			return scenario.Expectation{Released: &scenario.Window{From: "out", To: "back"}}
		}, false, []string{"the window lasted 500ms, too short"}},
		{"servedAfter: a mark never reached", func(w *world) scenario.Expectation {
			return scenario.Expectation{ServedAfter: "restarted"}
		}, false, []string{`mark "restarted" was never reached`}},
		{"servedAfter: served", func(w *world) scenario.Expectation {
			t := w.mark("restarted")
			w.req(t+0.5, 0.01, 200, "web")
			return scenario.Expectation{ServedAfter: "restarted"}
		}, true, []string{"1 served; the first sent at +00:00.5"}},
		{"statusSays: said", func(w *world) scenario.Expectation {
			w.r.statuses = []status{{at: w.at(2), message: "pod web: containers not ready: sidecar"}}
			return scenario.Expectation{StatusSays: []string{"sidecar"}}
		}, true, []string{"at +00:02.000: pod web: containers not ready: sidecar"}},
		{"statusSays: never said", func(w *world) scenario.Expectation {
			w.r.statuses = []status{{at: w.at(2), message: "no pod takes traffic"}}
			return scenario.Expectation{StatusSays: []string{"sidecar"}}
		}, false, []string{"the status read never said it", `+00:02.000: "no pod takes traffic"`}},
		{"requestsSentToKilledPod: none after the front door knew", func(w *world) scenario.Expectation {
			w.readyPod()
			w.route(1, -1, 2, "web", 200)
			w.ready(10, false)
			w.fact(10.002, record.Fact{Kind: record.KindEvent, Pod: "web", Container: "app", Event: &record.Event{Reason: "Killing", Message: "Container app failed liveness probe, will be restarted"}})
			w.route(2, -1, 10.003, "web", 200)     // the news on its way
			w.route(3, 10.010, 12.002, "web", 200) // held, released when ready again
			w.ready(12, true)
			return scenario.Expectation{RequestsSentToKilledPod: intp(0)}
		}, true, []string{"app of web killed at +00:10.002 (not ready from +00:10.000, ready again at +00:12.000): 0 sent",
			"1 sent before the front door learned of it", "request 2 sent at +00:10.003"}},
		{"requestsSentToKilledPod: one after the front door held", func(w *world) scenario.Expectation {
			w.readyPod()
			w.ready(10, false)
			w.fact(10.002, record.Fact{Kind: record.KindEvent, Pod: "web", Container: "app", Event: &record.Event{Reason: "Killing", Message: "Container app failed liveness probe"}})
			w.route(3, 10.010, 12.002, "web", 200)
			w.route(4, -1, 10.5, "web", 200) // sent to the pod although the front door knew
			w.ready(12, true)
			return scenario.Expectation{RequestsSentToKilledPod: intp(0)}
		}, false, []string{"1 requests sent to a pod in a kill's window after the front door knew, want at most 0", "request 4 sent at +00:10.500"}},
		{"requestsSentToKilledPod: killed while still published ready, everything sent to it counts", func(w *world) scenario.Expectation {
			w.readyPod()
			w.route(1, -1, 2, "web", 200)
			// The kubelet's order: the kill, then the pod not ready only
			// when the container is gone, 2 s later.
			w.fact(10, record.Fact{Kind: record.KindEvent, Pod: "web", Container: "app", Event: &record.Event{Reason: "Killing", Message: "Container app failed liveness probe, will be restarted"}})
			w.route(2, -1, 10.5, "web", 200)
			w.route(3, -1, 11.5, "web", 200)
			w.ready(12, false)
			w.ready(13, true)
			return scenario.Expectation{RequestsSentToKilledPod: intp(0)}
		}, false, []string{"2 requests sent to a pod in a kill's window", "killed while still published ready, until +00:12.000", "request 2 sent at +00:10.500"}},
		{"requestsSentToKilledPod: no kill to judge", func(w *world) scenario.Expectation {
			w.readyPod()
			return scenario.Expectation{RequestsSentToKilledPod: intp(0)}
		}, false, []string{"the recording holds no kill before podgate's stop"}},
		{"noTrafficTo: a pod never ready got one", func(w *world) scenario.Expectation {
			w.readyPod()
			w.route(1, -1, 0.5, "web", 200)
			return scenario.Expectation{NoTrafficTo: &scenario.NoTraffic{Pod: "pod", Always: true}}
		}, false, []string{"the front door sent it 1 requests, want none", "request 1 sent at +00:00.500"}},
		{"noTrafficTo: a pod not bound", func(w *world) scenario.Expectation {
			return scenario.Expectation{NoTrafficTo: &scenario.NoTraffic{Pod: "pod"}}
		}, false, []string{`no pod was bound to "pod"`}},
		{"noTrafficTo: once the endpoint left, a request sent to the pod counts", func(w *world) scenario.Expectation {
			w.readyPod()
			w.ready(5, false)
			w.route(1, -1, 5.5, "web", 200)
			w.ready(6, true)
			return scenario.Expectation{NoTrafficTo: &scenario.NoTraffic{Pod: "pod"}}
		}, false, []string{"the front door sent it 1 requests while it was not ready, after it knew", "request 1 sent at +00:05.500"}},
		{"noTrafficTo: a request sent before the endpoint left is the news on its way", func(w *world) scenario.Expectation {
			w.readyPod()
			// Pod Ready=False at +5; the EndpointSlice follows 300 ms
			// later (a loaded endpoint controller), and the front door
			// routes by it.
			notReady, ready := false, true
			w.fact(5, record.Fact{Kind: record.KindCondition, Pod: "web", Condition: &record.Condition{Type: "Ready", Status: "False"}})
			w.route(1, -1, 5.1, "web", 200)
			w.fact(5.3, record.Fact{Kind: record.KindEndpoint, Pod: "web", Endpoint: &record.Endpoint{Service: "web", Slice: "web", Address: "127.0.0.2", Ready: &notReady}})
			w.fact(6, record.Fact{Kind: record.KindCondition, Pod: "web", Condition: &record.Condition{Type: "Ready", Status: "True"}})
			w.fact(6.001, record.Fact{Kind: record.KindEndpoint, Pod: "web", Endpoint: &record.Endpoint{Service: "web", Slice: "web", Address: "127.0.0.2", Ready: &ready}})
			return scenario.Expectation{NoTrafficTo: &scenario.NoTraffic{Pod: "pod"}}
		}, true, []string{"none while it was not ready", "1 sent before the front door learned of it", "request 1 sent at +00:05.100"}},
		{"noTrafficTo: the front door's own pod-out says when it knew, not the recording's watch", func(w *world) scenario.Expectation {
			w.readyPod()
			w.ready(5, false) // the recording saw the endpoint leave at +5.001
			w.route(1, -1, 5.005, "web", 200)
			w.fact(5.02, record.Fact{Kind: record.KindRoute, Pod: "web", Route: &record.Route{Target: "default/web", Decision: record.DecisionPodOut}})
			w.route(2, -1, 5.5, "web", 200)
			w.ready(6, true)
			return scenario.Expectation{NoTrafficTo: &scenario.NoTraffic{Pod: "pod"}}
		}, false, []string{"the front door sent it 1 requests while it was not ready, after it knew", "request 2 sent at +00:05.500"}},
		{"noTrafficTo without routing decisions (Knative): an answer from 1 s after the pod turned not ready counts", func(w *world) scenario.Expectation {
			w.readyPod()
			w.ready(5, false)
			w.answer(1, 5.2, 5.3)  // the news on its way
			w.answer(2, 5.9, 6.05) // answered at +6.05, not ready until +8
			w.answer(3, 7.1, 7.2)  // the gate knew first: the pod's Ready follows
			w.ready(8, true)
			return scenario.Expectation{NoTrafficTo: &scenario.NoTraffic{Pod: "pod"}}
		}, false, []string{"it answered 1 requests while it was not ready, more than 1s from either end of the window", "request 2 sent at +00:05.900"}},
		{"noTrafficTo without routing decisions (Knative): a request the gate held until ready again does not count", func(w *world) scenario.Expectation {
			w.readyPod()
			w.ready(5, false)
			w.answer(1, 5.2, 5.3)
			w.answer(2, 5.9, 7.2) // held by the gate, answered once ready at +7
			w.ready(7, true)
			return scenario.Expectation{NoTrafficTo: &scenario.NoTraffic{Pod: "pod"}}
		}, true, []string{"it answered 2 requests, none while it was not ready more than 1s from either end of the window", "1 answered within 1s of its readiness changing"}},
		{"noTrafficTo without routing decisions (Knative): the gate's condition ready again ends the window before the pod's Ready", func(w *world) scenario.Expectation {
			w.readyPod()
			w.ready(5, false)
			w.fact(8, record.Fact{Kind: record.KindGate, Pod: "web", Gate: &record.Gate{Ready: true}})
			w.answer(1, 7.5, 7.6) // within a second of the gate's word
			w.answer(2, 8.1, 8.2) // the gate open, the pod's Ready not yet
			w.ready(9.5, true)
			return scenario.Expectation{NoTrafficTo: &scenario.NoTraffic{Pod: "pod"}}
		}, true, []string{"none while it was not ready more than 1s from either end of the window", "2 answered within 1s of its readiness changing"}},
		{"noTrafficTo: with neither a hold nor an endpoint change every request counts", func(w *world) scenario.Expectation {
			w.readyPod()
			w.fact(5, record.Fact{Kind: record.KindCondition, Pod: "web", Condition: &record.Condition{Type: "Ready", Status: "False"}})
			w.route(1, -1, 5.1, "web", 200)
			w.fact(6, record.Fact{Kind: record.KindCondition, Pod: "web", Condition: &record.Condition{Type: "Ready", Status: "True"}})
			return scenario.Expectation{NoTrafficTo: &scenario.NoTraffic{Pod: "pod"}}
		}, false, []string{"the front door sent it 1 requests while it was not ready, after it knew", "request 1 sent at +00:05.100"}},
		{"event: found", func(w *world) scenario.Expectation {
			w.readyPod()
			w.fact(3, record.Fact{Kind: record.KindEvent, Pod: "web", Container: "app", Event: &record.Event{Reason: "Killing", Message: "Container app failed liveness probe, will be restarted"}})
			return scenario.Expectation{Event: &scenario.EventRule{Reason: "Killing", Pod: "pod", Container: "app", Message: "failed liveness"}}
		}, true, []string{"at +00:03.000, web: Container app failed liveness probe"}},
		{"event: missing", func(w *world) scenario.Expectation {
			w.readyPod()
			w.fact(3, record.Fact{Kind: record.KindEvent, Pod: "web", Event: &record.Event{Reason: "Started", Message: "Started container app"}})
			return scenario.Expectation{Event: &scenario.EventRule{Reason: "Killing"}}
		}, false, []string{"no such event among the recording's (Started×1)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			e := tt.setup(w)
			if len(w.facts) == 0 { // a recording has facts
				w.fact(0, record.Fact{Kind: record.KindMark, Mark: &record.Mark{Name: "start"}})
			}
			v := w.judge().judge(e)
			if v.Pass != tt.pass {
				t.Errorf("%s: pass %t, want %t: %s", v.Rule, v.Pass, tt.pass, v.Detail)
			}
			for _, word := range tt.words {
				if !strings.Contains(v.Detail, word) {
					t.Errorf("%s: detail %q\nwant it to contain %q", v.Rule, v.Detail, word)
				}
			}
		})
	}
}

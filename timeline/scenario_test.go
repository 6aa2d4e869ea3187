package timeline

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/podgate/podgate/recording"
)

// Recordings written through recording.Writer and read back with
// recording.Read, as podgate timeline reads a file.

var t0 = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

// scenario builds a recording second by second.
type scenario struct {
	facts []recording.Fact
	reqID uint64
}

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func bp(b bool) *bool { return &b }

func (s *scenario) add(sec float64, f recording.Fact) {
	f.Time = at(sec)
	if f.Namespace == "" && f.Pod != "" {
		f.Namespace = "default"
	}
	s.facts = append(s.facts, f)
}

func (s *scenario) state(sec float64, pod, ctr, state, reason string, ready bool, restarts int32, id string) {
	st := &recording.State{State: state, Reason: reason, Ready: ready, RestartCount: restarts, ContainerID: id}
	if state == "terminated" {
		code := int32(137)
		st.ExitCode = &code
	}
	s.add(sec, recording.Fact{Kind: recording.KindContainer, Pod: pod, Container: ctr, State: st})
}

func (s *scenario) probe(sec float64, pod, ctr, kind, result, msg string, restart bool) {
	s.add(sec, recording.Fact{Kind: recording.KindProbe, Pod: pod, Container: ctr,
		Probe: &recording.Probe{Probe: kind, Result: result, Message: msg, Restart: restart}})
}

func (s *scenario) event(sec float64, pod, ctr, reason, msg string) {
	s.add(sec, recording.Fact{Kind: recording.KindEvent, Pod: pod, Container: ctr,
		Event: &recording.Event{Type: "Normal", Reason: reason, Message: msg, Object: "Pod/" + pod}})
}

func (s *scenario) cond(sec float64, pod, typ, status, reason string) {
	s.add(sec, recording.Fact{Kind: recording.KindCondition, Pod: pod,
		Condition: &recording.Condition{Type: typ, Status: status, Reason: reason}})
}

func (s *scenario) endpoint(sec float64, pod, addr string, ready bool, removed bool) {
	s.add(sec, recording.Fact{Kind: recording.KindEndpoint, Pod: pod, Endpoint: &recording.Endpoint{
		Service: "web", Slice: "web-abcde", Address: addr, Ready: bp(ready), Serving: bp(ready), Terminating: bp(false), Removed: removed}})
}

func (s *scenario) gate(sec float64, pod string, ready bool, msg string) {
	s.add(sec, recording.Fact{Kind: recording.KindGate, Pod: pod, Gate: &recording.Gate{Ready: ready, Message: msg}})
}

func (s *scenario) mark(sec float64, name string) {
	s.add(sec, recording.Fact{Kind: recording.KindMark, Mark: &recording.Mark{Name: name}})
}

// request records one request sent at sec to pod ("" for none), lasting
// 20 ms, with its routing decision.
func (s *scenario) request(sec float64, pod string, status int, errMsg string, held time.Duration, timedOut bool) {
	s.reqID++
	id := s.reqID
	start := at(sec).Add(-held)
	if held > 0 {
		s.add(sec-held.Seconds(), recording.Fact{Kind: recording.KindRoute, Route: &recording.Route{Target: "default/web", Decision: recording.DecisionHeld, Request: id}})
	}
	decision := recording.DecisionRouted
	switch {
	case timedOut:
		decision = recording.DecisionTimedOut
	case held > 0:
		decision = recording.DecisionReleased
	}
	rf := recording.Fact{Kind: recording.KindRoute, Route: &recording.Route{Target: "default/web", Decision: decision, Request: id, Held: held}}
	if !timedOut {
		rf.Pod = pod
	}
	s.add(sec, rf)
	end := sec + 0.02
	lat := at(end).Sub(start)
	f := recording.Fact{Kind: recording.KindRequest, Request: &recording.Request{
		ID: id, Target: "default/web", Method: "GET", Path: "/", Start: start, Status: status, Latency: lat, Error: errMsg}}
	if !timedOut {
		f.Pod = pod
	}
	s.add(end, f)
}

// roundTrip writes the facts with recording.Writer and reads them back.
func (s *scenario) roundTrip(t testing.TB, detail string) (recording.Header, []recording.Fact) {
	t.Helper()
	var buf bytes.Buffer
	w, err := recording.NewWriter(&buf, recording.Header{Source: "podgate run", Started: t0, Detail: detail}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range s.facts {
		w.Record(f)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	h, facts, err := recording.Read(&buf)
	if err != nil {
		t.Fatalf("reading back: %v", err)
	}
	return h, facts
}

const liveness500 = "HTTP probe failed with statuscode: 500"

// startPod is a pod coming up: created, running, ready, in the slice.
func (s *scenario) startPod(sec float64, pod, addr string, gated bool) {
	s.state(sec, pod, "app", "waiting", "ContainerCreating", false, 0, "")
	s.state(sec+0.3, pod, "app", "running", "", false, 0, pod+"-app-0")
	s.probe(sec+1, pod, "app", "readiness", "success", "", false)
	s.state(sec+1, pod, "app", "running", "", true, 0, pod+"-app-0")
	if gated {
		s.gate(sec+1.01, pod, true, "")
	}
	s.cond(sec+1.02, pod, "Ready", "True", "")
	s.endpoint(sec+1.03, pod, addr, true, false)
}

// livenessRestart is seed 004's scenario on podgate: the liveness probe
// of web-a's app fails three times, 5 s apart; the gate takes the pod out
// of the endpoints at the first failure, before the kill; the requests go
// to web-b until web-a is ready again.
func livenessRestart() *scenario {
	s := &scenario{}
	s.startPod(0, "web-a", "10.244.0.2", true)
	s.startPod(0.2, "web-b", "10.244.0.3", true)
	// Requests sent before any pod was ready wait for one.
	s.request(1.05, "web-a", 200, "", 900*time.Millisecond, false)
	s.request(1.25, "web-b", 200, "", 1000*time.Millisecond, false)
	for sec := 2.0; sec < 30; sec += 0.5 {
		pod := "web-a"
		if int(sec*2)%2 == 1 || (sec >= 10 && sec < 23) {
			pod = "web-b"
		}
		s.request(sec, pod, 200, "", 0, false)
	}
	s.mark(9.5, "web-a: liveness answers 500")
	for i, sec := range []float64{10, 15, 20} {
		s.probe(sec, "web-a", "app", "liveness", "failure", liveness500, i == 2)
	}
	s.gate(10.01, "web-a", false, "app: liveness probe failing")
	s.cond(10.02, "web-a", "Ready", "False", "ReadinessGatesNotReady")
	s.endpoint(10.03, "web-a", "10.244.0.2", false, false)
	s.event(20, "web-a", "app", "Killing", "Container app failed liveness probe, will be restarted")
	s.state(20.4, "web-a", "app", "terminated", "Error", false, 0, "web-a-app-0")
	s.event(20.5, "web-a", "app", "Started", "Started container app")
	s.state(20.5, "web-a", "app", "running", "", false, 1, "web-a-app-1")
	s.mark(20.6, "web-a: liveness answers 200")
	s.probe(22, "web-a", "app", "readiness", "success", "", false)
	s.state(22, "web-a", "app", "running", "", true, 1, "web-a-app-1")
	s.gate(22.01, "web-a", true, "")
	s.cond(22.02, "web-a", "Ready", "True", "")
	s.endpoint(22.03, "web-a", "10.244.0.2", true, false)
	for sec := 25.0; sec < 30; sec += 5 {
		s.probe(sec, "web-a", "app", "liveness", "success", "", false)
		s.probe(sec, "web-b", "app", "liveness", "success", "", false)
	}
	s.mark(30, "end")
	return s
}

// kubernetesRestart is the same failure without the gate, as seed 004
// saw it on Kubernetes: the endpoint stays ready until the container is
// restarted, and requests reach the dying container.
func kubernetesRestart() *scenario {
	s := &scenario{}
	s.startPod(0, "web-a", "10.244.0.2", false)
	s.startPod(0.2, "web-b", "10.244.0.3", false)
	for sec := 2.0; sec < 30; sec += 1 {
		pod := "web-a"
		if int(sec)%2 == 1 || (sec > 21 && sec < 25.02) {
			pod = "web-b" // out of the endpoints
		}
		switch {
		case pod == "web-a" && sec >= 20 && sec < 21:
			s.request(sec, pod, 502, "dial tcp 10.244.0.2:8080: connect: connection refused", 0, false)
		default:
			s.request(sec, pod, 200, "", 0, false)
		}
	}
	for i, sec := range []float64{10, 15, 20} {
		s.add(sec, recording.Fact{Kind: recording.KindEvent, Pod: "web-a", Container: "app", Event: &recording.Event{
			Type: "Warning", Reason: "Unhealthy", Message: "Liveness probe failed: " + liveness500, Object: "Pod/web-a", Count: int32(i + 1)}})
	}
	for i, sec := range []float64{10, 15, 20} {
		s.probe(sec, "web-a", "app", "liveness", "failure", liveness500, i == 2)
	}
	s.event(20, "web-a", "app", "Killing", "Container app failed liveness probe, will be restarted")
	s.state(20.5, "web-a", "app", "terminated", "Error", false, 0, "web-a-app-0")
	s.state(21, "web-a", "app", "running", "", false, 1, "web-a-app-1")
	s.cond(21.01, "web-a", "Ready", "False", "ContainersNotReady")
	s.endpoint(21.02, "web-a", "10.244.0.2", false, false)
	s.probe(25, "web-a", "app", "readiness", "success", "", false)
	s.state(25, "web-a", "app", "running", "", true, 1, "web-a-app-1")
	s.cond(25.01, "web-a", "Ready", "True", "")
	s.endpoint(25.02, "web-a", "10.244.0.2", true, false)
	return s
}

func (s *scenario) String() string { return fmt.Sprintf("%d facts", len(s.facts)) }

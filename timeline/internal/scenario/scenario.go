// Package scenario builds the recordings the timeline's tests render:
// seed 004's liveness restart with podgate's gate and without it, held
// and refused requests, written through recording.Writer and read back
// as podgate timeline reads a file. Test support only: no command
// imports it.
package scenario

import (
	"bytes"
	"testing"
	"time"

	"github.com/podgate/podgate/recording"
)

// T0 is when every scenario starts.
var T0 = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

// Scenario builds a recording second by second.
type Scenario struct {
	Facts []recording.Fact
	reqID uint64
}

// At is sec seconds after T0.
func At(sec float64) time.Time { return T0.Add(time.Duration(sec * float64(time.Second))) }

// Bool points at b.
func Bool(b bool) *bool { return &b }

// Add records f at sec, in namespace default when it names a pod.
func (s *Scenario) Add(sec float64, f recording.Fact) {
	f.Time = At(sec)
	if f.Namespace == "" && f.Pod != "" {
		f.Namespace = "default"
	}
	s.Facts = append(s.Facts, f)
}

// State records a container status (exit 137 when terminated).
func (s *Scenario) State(sec float64, pod, ctr, state, reason string, ready bool, restarts int32, id string) {
	st := &recording.State{State: state, Reason: reason, Ready: ready, RestartCount: restarts, ContainerID: id}
	if state == "terminated" {
		code := int32(137)
		st.ExitCode = &code
	}
	s.Add(sec, recording.Fact{Kind: recording.KindContainer, Pod: pod, Container: ctr, State: st})
}

// Probe records one probe attempt.
func (s *Scenario) Probe(sec float64, pod, ctr, kind, result, msg string, restart bool) {
	s.Add(sec, recording.Fact{Kind: recording.KindProbe, Pod: pod, Container: ctr,
		Probe: &recording.Probe{Probe: kind, Result: result, Message: msg, Restart: restart}})
}

// Event records a Normal event about a container.
func (s *Scenario) Event(sec float64, pod, ctr, reason, msg string) {
	s.Add(sec, recording.Fact{Kind: recording.KindEvent, Pod: pod, Container: ctr,
		Event: &recording.Event{Type: "Normal", Reason: reason, Message: msg, Object: "Pod/" + pod}})
}

// Cond records a pod condition.
func (s *Scenario) Cond(sec float64, pod, typ, status, reason string) {
	s.Add(sec, recording.Fact{Kind: recording.KindCondition, Pod: pod,
		Condition: &recording.Condition{Type: typ, Status: status, Reason: reason}})
}

// Endpoint records pod's endpoint of Service web.
func (s *Scenario) Endpoint(sec float64, pod, addr string, ready bool, removed bool) {
	s.Add(sec, recording.Fact{Kind: recording.KindEndpoint, Pod: pod, Endpoint: &recording.Endpoint{
		Service: "web", Slice: "web-abcde", Address: addr, Ready: Bool(ready), Serving: Bool(ready), Terminating: Bool(false), Removed: removed}})
}

// Gate records the gate's verdict on pod.
func (s *Scenario) Gate(sec float64, pod string, ready bool, msg string) {
	s.Add(sec, recording.Fact{Kind: recording.KindGate, Pod: pod, Gate: &recording.Gate{Ready: ready, Message: msg}})
}

// Mark records an instant of the scenario.
func (s *Scenario) Mark(sec float64, name string) {
	s.Add(sec, recording.Fact{Kind: recording.KindMark, Mark: &recording.Mark{Name: name}})
}

// Request records one request sent at sec to pod ("" for none), lasting
// 20 ms, with its routing decision.
func (s *Scenario) Request(sec float64, pod string, status int, errMsg string, held time.Duration, timedOut bool) {
	s.reqID++
	id := s.reqID
	start := At(sec).Add(-held)
	if held > 0 {
		s.Add(sec-held.Seconds(), recording.Fact{Kind: recording.KindRoute, Route: &recording.Route{Target: "default/web", Decision: recording.DecisionHeld, Request: id}})
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
	s.Add(sec, rf)
	end := sec + 0.02
	lat := At(end).Sub(start)
	f := recording.Fact{Kind: recording.KindRequest, Request: &recording.Request{
		ID: id, Target: "default/web", Method: "GET", Path: "/", Start: start, Status: status, Latency: lat, Error: errMsg}}
	if !timedOut {
		f.Pod = pod
	}
	s.Add(end, f)
}

// RoundTrip writes the facts with recording.Writer and reads them back.
func (s *Scenario) RoundTrip(t testing.TB, detail string) (recording.Header, []recording.Fact) {
	t.Helper()
	var buf bytes.Buffer
	w, err := recording.NewWriter(&buf, recording.Header{Source: "podgate run", Started: T0, Detail: detail}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range s.Facts {
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

// Liveness500 is the kubelet's message for a liveness probe answered 500.
const Liveness500 = "HTTP probe failed with statuscode: 500"

// StartPod is a pod coming up: created, running, ready, in the slice.
func (s *Scenario) StartPod(sec float64, pod, addr string, gated bool) {
	s.State(sec, pod, "app", "waiting", "ContainerCreating", false, 0, "")
	s.State(sec+0.3, pod, "app", "running", "", false, 0, pod+"-app-0")
	s.Probe(sec+1, pod, "app", "readiness", "success", "", false)
	s.State(sec+1, pod, "app", "running", "", true, 0, pod+"-app-0")
	if gated {
		s.Gate(sec+1.01, pod, true, "")
	}
	s.Cond(sec+1.02, pod, "Ready", "True", "")
	s.Endpoint(sec+1.03, pod, addr, true, false)
}

// LivenessRestart is seed 004's scenario on podgate: the liveness probe
// of web-a's app fails three times, 5 s apart; the gate takes the pod out
// of the endpoints at the first failure, before the kill; the requests go
// to web-b until web-a is ready again.
func LivenessRestart() *Scenario {
	s := &Scenario{}
	s.StartPod(0, "web-a", "10.244.0.2", true)
	s.StartPod(0.2, "web-b", "10.244.0.3", true)
	// Requests sent before any pod was ready wait for one.
	s.Request(1.05, "web-a", 200, "", 900*time.Millisecond, false)
	s.Request(1.25, "web-b", 200, "", 1000*time.Millisecond, false)
	for sec := 2.0; sec < 30; sec += 0.5 {
		pod := "web-a"
		if int(sec*2)%2 == 1 || (sec >= 10 && sec < 23) {
			pod = "web-b"
		}
		s.Request(sec, pod, 200, "", 0, false)
	}
	s.Mark(9.5, "web-a: liveness answers 500")
	for i, sec := range []float64{10, 15, 20} {
		s.Probe(sec, "web-a", "app", "liveness", "failure", Liveness500, i == 2)
	}
	s.Gate(10.01, "web-a", false, "app: liveness probe failing")
	s.Cond(10.02, "web-a", "Ready", "False", "ReadinessGatesNotReady")
	s.Endpoint(10.03, "web-a", "10.244.0.2", false, false)
	s.Event(20, "web-a", "app", "Killing", "Container app failed liveness probe, will be restarted")
	s.State(20.4, "web-a", "app", "terminated", "Error", false, 0, "web-a-app-0")
	s.Event(20.5, "web-a", "app", "Started", "Started container app")
	s.State(20.5, "web-a", "app", "running", "", false, 1, "web-a-app-1")
	s.Mark(20.6, "web-a: liveness answers 200")
	s.Probe(22, "web-a", "app", "readiness", "success", "", false)
	s.State(22, "web-a", "app", "running", "", true, 1, "web-a-app-1")
	s.Gate(22.01, "web-a", true, "")
	s.Cond(22.02, "web-a", "Ready", "True", "")
	s.Endpoint(22.03, "web-a", "10.244.0.2", true, false)
	for sec := 25.0; sec < 30; sec += 5 {
		s.Probe(sec, "web-a", "app", "liveness", "success", "", false)
		s.Probe(sec, "web-b", "app", "liveness", "success", "", false)
	}
	s.Mark(30, "end")
	return s
}

// KubernetesRestart is the same failure without the gate, as seed 004
// saw it on Kubernetes: the endpoint stays ready until the container is
// restarted, and requests reach the dying container.
func KubernetesRestart() *Scenario {
	s := &Scenario{}
	s.StartPod(0, "web-a", "10.244.0.2", false)
	s.StartPod(0.2, "web-b", "10.244.0.3", false)
	for sec := 2.0; sec < 30; sec += 1 {
		pod := "web-a"
		if int(sec)%2 == 1 || (sec > 21 && sec < 25.02) {
			pod = "web-b" // out of the endpoints
		}
		switch {
		case pod == "web-a" && sec >= 20 && sec < 21:
			s.Request(sec, pod, 502, "dial tcp 10.244.0.2:8080: connect: connection refused", 0, false)
		default:
			s.Request(sec, pod, 200, "", 0, false)
		}
	}
	for i, sec := range []float64{10, 15, 20} {
		s.Add(sec, recording.Fact{Kind: recording.KindEvent, Pod: "web-a", Container: "app", Event: &recording.Event{
			Type: "Warning", Reason: "Unhealthy", Message: "Liveness probe failed: " + Liveness500, Object: "Pod/web-a", Count: int32(i + 1)}})
	}
	for i, sec := range []float64{10, 15, 20} {
		s.Probe(sec, "web-a", "app", "liveness", "failure", Liveness500, i == 2)
	}
	s.Event(20, "web-a", "app", "Killing", "Container app failed liveness probe, will be restarted")
	s.State(20.5, "web-a", "app", "terminated", "Error", false, 0, "web-a-app-0")
	s.State(21, "web-a", "app", "running", "", false, 1, "web-a-app-1")
	s.Cond(21.01, "web-a", "Ready", "False", "ContainersNotReady")
	s.Endpoint(21.02, "web-a", "10.244.0.2", false, false)
	s.Probe(25, "web-a", "app", "readiness", "success", "", false)
	s.State(25, "web-a", "app", "running", "", true, 1, "web-a-app-1")
	s.Cond(25.01, "web-a", "Ready", "True", "")
	s.Endpoint(25.02, "web-a", "10.244.0.2", true, false)
	return s
}

// HeldAndTruncated is a run whose first requests wait for a pod, one of
// them until it gives up, one refused at shutdown, cut by its size bound.
func HeldAndTruncated() *Scenario {
	s := &Scenario{}
	s.Request(3.1, "web-a", 200, "", 2*time.Second, false)
	s.Request(3.0, "", 503, "", 3*time.Second, true)
	s.StartPod(2, "web-a", "10.244.0.2", true)
	s.Request(3.5, "web-a", 200, "", 0, false)
	s.Request(4, "", 503, "front door shutting down", 0, false)
	s.Add(4.5, recording.Fact{Kind: recording.KindTruncated, Truncated: &recording.Truncated{
		Limit: 4096, Message: "recording reached its size limit of 4096 bytes; later facts were dropped"}})
	return s
}

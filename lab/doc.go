// Package lab runs podgate scenarios end to end: the real `podgate run`
// binary (Process), load through its front door (Load, Recording),
// deadline-bounded waits on the control API (Poll, WaitPod,
// WaitServiceCondition, WaitRestart), the test app's toggles (Toggle),
// what a pod's gate says (GateRequests, ReadGateReadiness) and manifest
// copies with the few fields a scenario must change (Manifest).
//
// A scenario is a timeline: start podgate, start load, flip a toggle, wait
// for the state the control API reports, flip it back, stop the load, and
// then judge the Recording against the marked instants (Timeline). The
// verdicts are exact, never timing thresholds: "no request that started
// after the service left Ready was served before the toggle went back" is
// a fact of the recording, true or false on any machine.
//
// Everything is real: processes, loopback sockets (127.0.0.0/8 only),
// keep-alive HTTP clients. Nothing here depends on package testing, so a
// command can run the same scenarios.
package lab

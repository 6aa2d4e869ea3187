// Package lab runs podgate scenarios end to end: the real `podgate run`
// binary (Process), deadline-bounded waits on the control API (Poll,
// WaitPod, WaitServiceCondition, WaitRestart), the test app's toggles
// (Toggle), what a pod's gate says (GateRequests, ReadGateReadiness). The
// load sent through the front door and its record of every request are
// package lab/load's (load.Start, load.Recording); manifest copies with
// the few fields a scenario must change are package lab/manifest's.
//
// A scenario is a timeline: start podgate, start load, flip a toggle, wait
// for the state the control API reports, flip it back, stop the load, and
// then judge the load's recording against the marked instants (Timeline).
// The verdicts are exact, never timing thresholds: "no request that
// started after the service left Ready was served before the toggle went
// back" is a fact of the recording, true or false on any machine.
//
// The same steps run in either World: `podgate run` (Local), or a
// namespace of a cluster of `podgate cluster up` (package lab/kubelab),
// each reporting its service's state its own way (the Knative Service's
// conditions; the EndpointSlices and the gates' pod conditions), its
// pods reached through its PodHTTP.
//
// The same steps and judgements driven by a file instead of Go are
// scenario files (package lab/scenario, the format) run by `podgate lab
// run` (package lab/labrun).
//
// Everything is real: processes, loopback sockets (127.0.0.0/8 only, or
// the network namespaces of a cluster the lab started), keep-alive HTTP
// clients. Nothing here depends on package testing, so a command can run
// the same scenarios.
package lab

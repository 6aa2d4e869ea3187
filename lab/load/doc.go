// Package load generates HTTP load and records what became of it: a Load's
// workers send GET requests at a bounded rate over kept-alive loopback
// connections until Stop, and every request — its start, duration,
// status, error and first bytes of body — is in the Recording, which
// answers the questions a scenario's verdicts ask of it (what was served
// while nothing should have been, what was held and released, what
// failed).
//
// It knows nothing of podgate: a scenario (package lab) points it at a
// front door and judges the Recording against its Timeline.
package load

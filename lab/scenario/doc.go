// Package scenario is the scenario file format: a scenario's manifests,
// the load through the front door, its timed steps (waits for states,
// the test app's toggles, pod deletions, marked instants) and the
// expectations its run is judged by (apiVersion podgate.dev/v1alpha1,
// kind Scenario). Parse decodes a file strictly — unknown and duplicate
// fields, wrong types — and checks it, every problem with its field
// path; a step or a rule may name only the marks and pods of earlier
// steps. Package lab/labrun runs scenarios; docs/timeline.md#scenarios
// documents the format.
package scenario

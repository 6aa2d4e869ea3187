// Package scenario runs scenario files: a scenario's manifests under
// `podgate run` (the lab's Local world), load through its front door,
// timed steps (waits for states, the test app's toggles, pod deletions,
// marked instants), and expectations the run is judged by. Each run
// writes a recording (the run's own, with the scenario's marks), a
// picture of it (timeline/render's SVG) and a verdict: PASS or FAIL per
// expectation, each failure naming its rule, the numbers and the
// instants. `podgate lab run FILE...` is Run; docs/timeline.md#scenarios
// documents the format.
//
// The steps are the lab's (package lab): the same waits, toggles and
// judgements as the seed tests, driven by a file instead of Go.
package scenario

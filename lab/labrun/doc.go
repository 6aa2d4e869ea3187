// Package labrun is `podgate lab run`: it runs scenario files (package
// lab/scenario) under `podgate run` — the lab's Local world — with the
// lab's own steps (package lab: the same waits, toggles and judgements
// as the seed tests, driven by a file instead of Go), and leaves for
// each a recording (the run's own, with the scenario's marks), a picture
// of it (record/timeline/render's SVG) and a verdict: PASS or FAIL per step,
// per podgate's clean stop and per expectation, each failure naming its
// rule, the numbers and the instants.
package labrun

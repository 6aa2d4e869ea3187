package scenario

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// valid is the smallest scenario that runs; the cases below change it.
const valid = `apiVersion: podgate.dev/v1alpha1
kind: Scenario
name: small
manifests:
  - file: ../hello.yaml
load: {service: hello}
steps:
  - wait: {podsReady: 1, as: [pod]}
  - load: start
    mark: load started
  - wait: {served: 10}
  - toggle: {pod: pod, port: 8080, toggle: ready, set: false}
    mark: toggled
    timeout: 30s
  - at: 5s
    mark: five seconds in
expect:
  - failed: 0
  - servedAfter: toggled
`

func TestParseAcceptsAScenarioAndReadsItsDurations(t *testing.T) {
	s, err := Parse([]byte(valid), filepath.Join("dir", "small.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "small" || s.Dir != "dir" || len(s.Steps) != 5 || len(s.Expect) != 2 {
		t.Errorf("parsed %+v", s)
	}
	if s.timing[3].timeout != 30*time.Second || s.timing[0].timeout != DefaultStepTimeout || s.timing[4].at != 5*time.Second {
		t.Errorf("timings %+v: want the toggle's 30s, the default elsewhere, at 5s on the last", s.timing)
	}
	if set := s.Steps[3].Toggle.Set; set == nil || *set {
		t.Errorf("toggle set %v, want false", set)
	}
}

// Every problem is reported at once, with its field path; the words are
// the API server's (field.Error).
func TestParseNamesEachProblemByItsFieldPath(t *testing.T) {
	tests := []struct {
		name string
		edit func(string) string
		want []string
	}{
		{"an unknown field", replace("name: small", "name: small\nnmae: typo"), []string{`nmae: Forbidden: unknown field`}},
		{"a duplicate field", replace("name: small", "name: small\nname: again"), []string{`<document>: Invalid value`, `line 4: key "name" already set in map`}},
		{"a wrong type", replace("load: {service: hello}", "load: {service: hello, rate: fast}"), []string{`load.rate`, `must be a number`}},
		{"another version", replace("podgate.dev/v1alpha1", "podgate.dev/v2"), []string{`apiVersion: Unsupported value: "podgate.dev/v2"`}},
		{"another kind", replace("kind: Scenario", "kind: Pod"), []string{`kind: Unsupported value: "Pod"`}},
		{"a name that is no file name", replace("name: small", "name: ../Small"), []string{`name: Invalid value: "../Small"`}},
		{"no manifests", replace("manifests:\n  - file: ../hello.yaml\n", "manifests: []\n"), []string{`manifests: Required value`}},
		{"file and inline", replace("  - file: ../hello.yaml\n", "  - file: ../hello.yaml\n    inline: 'kind: Pod'\n"), []string{`manifests[0]: Invalid value`, "give one"}},
		{"no service", replace("load: {service: hello}", "load: {rate: 10}"), []string{`load.service: Required value`}},
		{"a malformed duration", replace("timeout: 30s", "timeout: soon"), []string{`steps[3].timeout: Invalid value: "soon"`}},
		{"a negative at", replace("at: 5s", "at: -5s"), []string{`steps[4].at: Invalid value: "-5s"`}},
		{"a step doing two things", replace("  - load: start\n", "  - load: start\n    delete: pod\n"), []string{`steps[1]: Invalid value: "delete, load"`}},
		{"a step doing nothing", replace("  - at: 5s\n    mark: five seconds in\n", "  - timeout: 5s\n"), []string{`steps[4]: Required value`}},
		{"a wait for two things", replace("wait: {served: 10}", "wait: {served: 10, gone: pod}"), []string{`steps[2].wait: Invalid value: "gone, served"`}},
		{"a wait for nothing", replace("wait: {served: 10}", "wait: {}"), []string{`steps[2].wait: Invalid value: ""`}},
		{"a hold of no time", replace("wait: {served: 10}", "wait: {for: 0s}"), []string{`steps[2].wait.for: Invalid value: "0s": must be positive`}},
		{"a hold as long as its step's timeout", replace("wait: {served: 10}", "wait: {for: 90s}"), []string{`steps[2].wait.for: Invalid value: "90s": must be shorter than the step's timeout (1m30s)`}},
		{"a hold and another wait", replace("wait: {served: 10}", "wait: {for: 2s, served: 10}"), []string{`steps[2].wait: Invalid value: "for, served"`}},
		{"an unknown service state", replace("wait: {served: 10}", "wait: {service: up}"), []string{`steps[2].wait.service: Unsupported value: "up"`}},
		{"a pod never bound", replace("toggle: {pod: pod,", "toggle: {pod: other,"), []string{`steps[3].toggle.pod: Invalid value: "other"`}},
		{"a pod bound twice", replace("wait: {served: 10}", "wait: {podsRunning: 1, as: [pod]}"), []string{`steps[2].wait.as[0]: Duplicate value: "pod"`}},
		{"more names than pods", replace("as: [pod]", "as: [pod, two]"), []string{`steps[0].wait.as: Too many: 2`}},
		{"an unknown toggle", replace("toggle: ready", "toggle: sleepy"), []string{`steps[3].toggle.toggle: Unsupported value: "sleepy"`}},
		{"a toggle without set", replace(", set: false}", "}"), []string{`steps[3].toggle.set: Required value`}},
		{"a port out of range", replace("port: 8080", "port: 70000"), []string{`steps[3].toggle.port: Invalid value: 70000`}},
		{"a mark used before it is made", replace("wait: {served: 10}", "wait: {servedAfter: toggled}"), []string{`steps[2].wait.servedAfter: Not found: "toggled"`}},
		{"a mark made twice", replace("mark: five seconds in", "mark: toggled"), []string{`steps[4].mark: Duplicate value: "toggled"`}},
		{"a wait on requests before the load", replace("  - load: start\n    mark: load started\n  - wait: {served: 10}\n", "  - wait: {served: 10}\n  - load: start\n    mark: load started\n"), []string{`steps[1].wait.served: Invalid value`, "only between load: start and load: stop"}},
		{"a load stopped before it started", replace("  - load: start\n", "  - load: stop\n"), []string{`steps[1].load: Invalid value: "stop": the load was not started`, `steps[2].wait.served`}},
		{"an expectation of two rules", replace("  - failed: 0\n", "  - failed: 0\n    servedAfter: toggled\n"), []string{`expect[0]: Invalid value: "failed, servedAfter"`}},
		{"an expectation of an unknown mark", replace("servedAfter: toggled", "servedAfter: never"), []string{`expect[1].servedAfter: Not found: "never"`}},
		{"no expectations", replace("expect:\n  - failed: 0\n  - servedAfter: toggled\n", "expect: []\n"), []string{`expect: Required value`}},
		{"a negative count", replace("failed: 0", "failed: -1"), []string{`expect[0].failed: Invalid value: -1`}},
		{"noneServed by a pod never bound", replace("failed: 0", "noneServed: {by: other}"), []string{`expect[0].noneServed.by: Invalid value: "other"`}},
		{"released by a pod", replace("failed: 0", "released: {to: toggled, by: pod}"), []string{`expect[0].released.by: Forbidden: goes with noneServed`}},
		{"several problems at once", func(s string) string {
			return replace("kind: Scenario", "kind: Pod")(replace("toggle: ready", "toggle: sleepy")(s))
		}, []string{"kind: Unsupported value", "steps[3].toggle.toggle: Unsupported value"}},
		// YAML 1.1 reads on, off, yes and no as booleans: quote them.
		{"a mark YAML reads as a boolean", replace("mark: five seconds in", "mark: off"), []string{`steps[4].mark: Invalid value: false: must be a string, not true or false`}},
		{"not YAML", func(string) string { return "name: [unclosed" }, []string{"<document>: Invalid value", "is not valid YAML"}},
		{"empty", func(string) string { return "" }, []string{"<document>: Required value: the file is empty"}},
		{"a list, not a scenario", func(string) string { return "- a\n- b\n" }, []string{"must be"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.edit(valid)), "small.yaml")
			var invalid *InvalidError
			if !errors.As(err, &invalid) {
				t.Fatalf("err %v, want an *InvalidError", err)
			}
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q\nwant it to contain %q", msg, w)
				}
			}
			for _, line := range strings.Split(msg, "\n") {
				if !strings.HasPrefix(line, "small.yaml: ") {
					t.Errorf("line %q does not name the file", line)
				}
			}
		})
	}
}

func replace(old, new string) func(string) string {
	return func(s string) string {
		if !strings.Contains(s, old) {
			panic("the valid scenario has no " + old)
		}
		return strings.Replace(s, old, new, 1)
	}
}

func TestReadAllRefusesTwoScenariosOfOneName(t *testing.T) {
	_, err := ReadAll([]string{"testdata/none.yaml", filepath.Join("..", "..", "examples", "scenarios", "seed-004-liveness-restart.yaml"),
		filepath.Join("..", "..", "examples", "scenarios", "seed-004-liveness-restart.yaml")})
	if err == nil || !strings.Contains(err.Error(), "testdata/none.yaml") || !strings.Contains(err.Error(), `"seed-004-liveness-restart" is the name of`) {
		t.Errorf("err %v: want the missing file and the name used twice", err)
	}
}

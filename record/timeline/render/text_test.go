package render

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podgate/podgate/record/timeline"
	"github.com/podgate/podgate/record/timeline/internal/fixtures"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the output")

// golden compares got with testdata/NAME.golden (rewritten with -update).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output; got:\n%s\n(go test -update rewrites it after review)", path, got)
	}
}

func TestTextIsSeed004sTable(t *testing.T) {
	tests := []struct {
		name     string
		scenario *fixtures.Scenario
		opts     timeline.Options
		// want are lines the table must have besides matching its golden
		// file: the behaviour the golden file pins, said plainly.
		want []string
	}{
		{"liveness-restart", fixtures.LivenessRestart(), timeline.Options{}, []string{
			"app: liveness failed 3× in 10s (HTTP probe failed with statuscode: 500) → restart",
			"Killing: Container app failed liveness probe, will be restarted",
			"requests sent to web-a while not ready or being killed (from +00:10.020 until ready again at +00:22.020): 0",
			"web 10.244.0.2: not-ready",
			"web: 10.244.0.2 not-ready, 10.244.0.3 ready",
			"requests sent to a pod while it was not ready or being killed: 0\n",
		}},
		{"kubernetes-restart", fixtures.KubernetesRestart(), timeline.Options{}, []string{
			"requests sent to web-a while not ready or being killed (from +00:20.000 until ready again at +00:25.010): 1 (502 error×1)",
			"requests sent to a pod while it was not ready or being killed: 1: web-a 1 (502 error×1)",
		}},
		{"liveness-restart-zoomed", fixtures.LivenessRestart(), timeline.Options{From: 9 * time.Second, To: 23 * time.Second, Interval: 2 * time.Second}, []string{
			"showing +00:09.000 to +00:23.000",
			"in the last 2s: web-b served 4",
		}},
		{"held-and-truncated", fixtures.HeldAndTruncated(), timeline.Options{}, []string{
			"TRUNCATED at +00:04.500: recording reached its size limit",
			"held 2 (released 1, timed out 1)",
			"no pod: failed 1 (503 error×1)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, facts := tt.scenario.RoundTrip(t, tt.name)
			var out bytes.Buffer
			if err := Recording(&out, "text", h, facts, tt.opts); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name+".txt", out.Bytes())
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("the table lacks %q", w)
				}
			}
		})
	}
}

func TestTextLeavesOutWhatTheProbeLinesSay(t *testing.T) {
	h, facts := fixtures.KubernetesRestart().RoundTrip(t, "")
	var out bytes.Buffer
	if err := Recording(&out, "text", h, facts, timeline.Options{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "Unhealthy") {
		t.Errorf("Unhealthy events repeat the probe lines of the same pod:\n%s", out.String())
	}
	if n := strings.Count(out.String(), "liveness failed"); n != 1 {
		t.Errorf("%d lines of liveness failures, want the three collapsed into 1", n)
	}
}

// An exec probe's message is its command's output, newline and all: the
// table keeps one line per row.
func TestTextKeepsARowOnOneLine(t *testing.T) {
	s := &fixtures.Scenario{}
	s.StartPod(0, "web-a", "10.244.0.2", false)
	s.Probe(5, "web-a", "app", "liveness", "failure", "cat: /tmp/live: No such file or directory\n", true)
	h, facts := s.RoundTrip(t, "")
	var b bytes.Buffer
	if err := Recording(&b, "text", h, facts, timeline.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, ")") {
			t.Errorf("a row broken across lines:\n%s", b.String())
		}
	}
	if !strings.Contains(b.String(), "app: liveness failed (cat: /tmp/live: No such file or directory) → restart") {
		t.Errorf("no one-line probe row:\n%s", b.String())
	}
}

package labrun

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podgate/podgate/lab/scenario"
	"github.com/podgate/podgate/record"
)

// scenarioFiles are the seed scenarios as files: what `podgate lab run`
// runs and docs/comparison.md shows.
func scenarioFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "scenarios", "*.yaml"))
	if err != nil || len(files) != 8 {
		t.Fatalf("examples/scenarios: %v, %v; want the eight seed scenarios", files, err)
	}
	return files
}

// The eight seed scenarios, from their files, through Run — what
// `podgate lab run` does — in podgate run, all at once: each passes every
// step and expectation, and leaves its recording (with its marks) and
// its picture.
func TestTheSeedScenarioFilesPass(t *testing.T) {
	scenarios, err := scenario.ReadAll(scenarioFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var out bytes.Buffer
	began := time.Now()
	results, err := Run(t.Context(), Config{
		Binary: podgateBin, RecordDir: dir, PodCIDR: "127.0.20.0/24", Parallel: len(scenarios), Table: true, Out: &out,
	}, scenarios)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d scenarios in parallel: %s", len(results), time.Since(began).Round(100*time.Millisecond))
	for _, r := range results {
		t.Run(r.Scenario.Name, func(t *testing.T) {
			if !r.Passed() {
				t.Errorf("FAIL:\n%s", r.Report)
			}
			t.Logf("%s", r.Took.Round(100*time.Millisecond))
			checkRecording(t, r)
			checkPicture(t, r.Picture)
			if !strings.Contains(r.Report, "+TIME") || !strings.Contains(r.Report, "PASS "+r.Scenario.Name) {
				t.Errorf("the report has no table or no result:\n%s", r.Report)
			}
		})
	}
	if summary, ok := Summary(results); !ok || !strings.Contains(out.String(), results[len(results)-1].Report) {
		t.Errorf("summary %q (ok %t), or the last report not printed", summary, ok)
	}
}

// checkRecording reads the scenario's recording: a podgate recording that
// names the scenario, with every mark of its steps and the front door's
// requests.
func checkRecording(t *testing.T, r *Result) {
	t.Helper()
	f, err := os.Open(r.Recording)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, facts, err := record.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.Detail, r.Scenario.Name) || h.Source != "podgate run" {
		t.Errorf("header %+v: want podgate run's, naming the scenario", h)
	}
	var marks []string
	requests := 0
	for _, f := range facts {
		switch f.Kind {
		case record.KindMark:
			marks = append(marks, f.Mark.Name)
		case record.KindRequest:
			requests++
		}
	}
	for _, st := range r.Scenario.Steps {
		if st.Mark != "" && !slices.Contains(marks, st.Mark) {
			t.Errorf("mark %q not in the recording (marks %q)", st.Mark, marks)
		}
	}
	if requests == 0 {
		t.Error("no request in the recording")
	}
}

// checkPicture checks an SVG is there and well-formed, with lanes.
func checkPicture(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := wellFormed(data); err != nil {
		t.Errorf("%s: %v", path, err)
	}
	if !bytes.Contains(data, []byte(`data-lane="container"`)) || !bytes.Contains(data, []byte(`data-lane="requests"`)) {
		t.Errorf("%s: no container or request lanes", path)
	}
}

// wellFormed reads an SVG as XML to its end.
func wellFormed(data []byte) error {
	dec := xml.NewDecoder(bytes.NewReader(data))
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		return errors.New("the root element is " + root + ", not svg")
	}
	return nil
}

package labrun

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/podgate/podgate/record"
	"github.com/podgate/podgate/record/timeline"
	"github.com/podgate/podgate/record/timeline/render"
)

// record writes the scenario's recording to path: the header and facts
// of `podgate run --record` (runFile: the agent's probe attempts, what
// the control API said, the front door's routing decisions and every
// request the load sent through it) with the scenario's marks among them
// at their instants. It returns the recording laid out on its time axis,
// and its facts.
func (r *runner) record(runFile, path string) (*timeline.Model, []record.Fact, error) {
	data, err := os.ReadFile(runFile)
	if err != nil {
		return nil, nil, fmt.Errorf("podgate run's recording: %w", err)
	}
	h, facts, warning, err := timeline.Parse(data)
	if err != nil {
		return nil, nil, fmt.Errorf("podgate run's recording: %w", err)
	}
	if warning != "" {
		return nil, nil, fmt.Errorf("podgate run's recording: %s", warning)
	}
	// The run's command line names the run's own directory; the
	// scenario is what says what ran.
	h.Detail = fmt.Sprintf("podgate lab run %s: %s", r.s.File, r.s.Name)
	return r.writeRecording(h, facts, path)
}

// writeRecording writes the header and facts to path with the
// scenario's marks among them at their instants, and returns the
// recording laid out on its time axis, and its facts.
func (r *runner) writeRecording(h record.Header, facts []record.Fact, path string) (*timeline.Model, []record.Fact, error) {
	var merged []record.Fact
	marks := r.tl.Marks()
	for _, f := range facts {
		// Each mark before the first fact after it; a truncated line stays
		// last, as the format says.
		for len(marks) > 0 && (marks[0].At.Before(f.Time) || f.Kind == record.KindTruncated) {
			merged = append(merged, markFact(marks[0].Name, marks[0].At))
			marks = marks[1:]
		}
		merged = append(merged, f)
	}
	for _, m := range marks {
		merged = append(merged, markFact(m.Name, m.At))
	}
	out, err := record.Create(path, h, 0)
	if err != nil {
		return nil, nil, err
	}
	for _, f := range merged {
		out.Record(f)
	}
	if err := out.Close(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	m, err := timeline.Build(h, merged, timeline.Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, merged, nil
}

func markFact(name string, at time.Time) record.Fact {
	return record.Fact{Time: at, Kind: record.KindMark, Mark: &record.Mark{Name: name}}
}

// writePicture writes the SVG of the facts to path. Messages that name
// the run's own directory (an exec probe's file) say $(WORKDIR) instead,
// so pictures of two runs differ only in what happened.
func writePicture(path string, h record.Header, facts []record.Fact, work string) error {
	clean := make([]record.Fact, len(facts))
	for i, f := range facts {
		clean[i] = withoutDir(f, work)
	}
	m, err := timeline.Build(h, clean, timeline.Options{})
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := render.SVG(&b, m, timeline.Options{}); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// withoutDir is f with dir replaced by $(WORKDIR) in its messages.
func withoutDir(f record.Fact, dir string) record.Fact {
	r := func(s string) string { return strings.ReplaceAll(s, dir, "$(WORKDIR)") }
	switch {
	case f.Probe != nil:
		p := *f.Probe
		p.Message = r(p.Message)
		f.Probe = &p
	case f.State != nil:
		st := *f.State
		st.Message = r(st.Message)
		f.State = &st
	case f.Event != nil:
		e := *f.Event
		e.Message = r(e.Message)
		f.Event = &e
	case f.Condition != nil:
		c := *f.Condition
		c.Message = r(c.Message)
		f.Condition = &c
	case f.Gate != nil:
		g := *f.Gate
		g.Message = r(g.Message)
		f.Gate = &g
	}
	return f
}

// textTable is the recording's timeline table (podgate timeline FILE).
func textTable(m *timeline.Model) string {
	var b bytes.Buffer
	if err := render.Text(&b, m, timeline.Options{}); err != nil {
		return "table: " + err.Error() + "\n"
	}
	return b.String()
}

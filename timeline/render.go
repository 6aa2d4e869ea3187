package timeline

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/podgate/podgate/recording"
)

// Formats are the views Render writes.
var Formats = []string{"text", "html", "svg"}

// Render writes the view named format ("text", "html" or "svg") of a
// recording.
func Render(w io.Writer, format string, h recording.Header, facts []recording.Fact, o Options) error {
	m, err := Build(h, facts, o)
	if err != nil {
		return err
	}
	switch format {
	case "text":
		return WriteText(w, m, o)
	case "html":
		return WriteHTML(w, m, o)
	case "svg":
		return WriteSVG(w, m, o)
	}
	return fmt.Errorf("format %q: want one of %s", format, strings.Join(Formats, ", "))
}

// Parse reads a recording from its bytes. A recording whose last line
// was cut short (podgate killed in the middle of writing it) is read up
// to its last complete line, and warning says so; any other flaw is the
// reader's error, naming the line.
func Parse(data []byte) (h recording.Header, facts []recording.Fact, warning string, err error) {
	h, facts, err = recording.Read(bytes.NewReader(data))
	if err == nil || len(data) == 0 || data[len(data)-1] == '\n' {
		return h, facts, "", err
	}
	cut := bytes.LastIndexByte(data, '\n')
	if cut < 0 {
		return h, facts, "", err
	}
	h2, facts2, err2 := recording.Read(bytes.NewReader(data[:cut+1]))
	if err2 != nil {
		return h, facts, "", err
	}
	lines := bytes.Count(data[:cut+1], []byte("\n"))
	return h2, facts2, fmt.Sprintf("the recording's last line (%d) is cut short, as when podgate is killed while writing; showing the %d lines before it", lines+1, lines), nil
}

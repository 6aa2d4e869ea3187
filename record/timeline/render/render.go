// Package render draws a timeline.Model: as text, the table field notes
// build by hand (time, kind, what happened, the endpoints after it; probe
// failures collapsed; the requests per interval by pod; after each kill,
// the requests its pod got while not ready or being killed); as SVG, a
// swimlane per container, endpoint and gate verdict, the requests per pod
// as histograms, the marks, a time axis and a legend; as one
// self-contained HTML page around the SVG, zoomable by time range, with a
// panel of the pods and containers. Pure: a Model in, bytes to a writer.
package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/podgate/podgate/record"
	"github.com/podgate/podgate/record/timeline"
)

// Formats are the views Render writes.
var Formats = []string{"text", "html", "svg"}

// Recording writes the view named format ("text", "html" or "svg") of a
// recording.
func Recording(w io.Writer, format string, h record.Header, facts []record.Fact, o timeline.Options) error {
	m, err := timeline.Build(h, facts, o)
	if err != nil {
		return err
	}
	switch format {
	case "text":
		return Text(w, m, o)
	case "html":
		return HTML(w, m, o)
	case "svg":
		return SVG(w, m, o)
	}
	return fmt.Errorf("format %q: want one of %s", format, strings.Join(Formats, ", "))
}

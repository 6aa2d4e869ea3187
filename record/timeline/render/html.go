package render

import (
	_ "embed"
	"fmt"
	"io"
	"strings"

	"github.com/podgate/podgate/record/timeline"
)

//go:embed assets/page.css
var pageCSS string

//go:embed assets/page.js
var pageJS string

// HTML writes one self-contained page: the picture (inline SVG),
// the state of every pod and container at the end of the range, and the
// script that zooms by time range; no external asset. It prints on white.
func HTML(w io.Writer, m *timeline.Model, o timeline.Options) error {
	var svg, panel strings.Builder
	if err := SVG(&svg, m, o); err != nil {
		return err
	}
	if err := Panel(&panel, m); err != nil {
		return err
	}
	_, err := io.WriteString(w, page(Title(m), Meta(m, o), svg.String(), panel.String(), ""))
	return err
}

// LivePage writes the page of a live view: the same page with an
// empty picture that the script fills from the Server-Sent Events at
// eventsURL.
func LivePage(w io.Writer, title, eventsURL string) error {
	_, err := io.WriteString(w, page(title, "waiting for the first facts…", "", "", eventsURL))
	return err
}

// Title is the page's title for m.
func Title(m *timeline.Model) string {
	t := "podgate timeline"
	if m.Header.Source != "" {
		t += " — " + m.Header.Source
	}
	if m.Header.Detail != "" {
		t += ": " + m.Header.Detail
	}
	return t
}

// Meta is the line under the title: when, how long, how much is shown.
func Meta(m *timeline.Model, o timeline.Options) string {
	from, to := m.Range(o)
	s := fmt.Sprintf("started %s · %s · %d facts · showing %s to %s",
		m.Start.Format("2006-01-02 15:04:05 MST"), m.End.Sub(m.Start).Round(1e6), m.Facts, m.Rel(from), m.Rel(to))
	if m.Truncated != nil {
		s += " · TRUNCATED at " + m.Rel(m.Truncated.At) + ": " + m.Truncated.Name
	}
	return s
}

func page(title, meta, svg, panel, live string) string {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
	b.WriteString(`<meta name="viewport" content="width=device-width, initial-scale=1">`)
	fmt.Fprintf(&b, "<title>%s</title><style>%s</style></head>\n", esc(title), pageCSS)
	if live != "" {
		fmt.Fprintf(&b, `<body data-live="%s">`, esc(live))
	} else {
		b.WriteString("<body>")
	}
	fmt.Fprintf(&b, `<h1>%s</h1><p class="meta" id="meta">%s</p>`, esc(title), esc(meta))
	b.WriteString(`<form class="controls" id="controls" onsubmit="return false">`)
	b.WriteString(`<label>from <input type="number" id="from" step="0.1" min="0"> s</label>`)
	b.WriteString(`<label>to <input type="number" id="to" step="0.1" min="0"> s</label>`)
	b.WriteString(`<button type="button" id="reset">whole recording</button>`)
	b.WriteString(`<span class="hint">drag across the picture to zoom in; double-click it to see it all; hover for details</span>`)
	if live != "" {
		b.WriteString(`<span class="live-status" id="live-status">connecting…</span>`)
	}
	b.WriteString("</form>\n")
	fmt.Fprintf(&b, "<div id=\"view\">%s</div>\n<section id=\"panel\">%s</section>\n", svg, panel)
	fmt.Fprintf(&b, "<script>%s</script>\n</body></html>\n", pageJS)
	return b.String()
}

// Panel writes a table of every pod and container as the last facts
// left them: the pod's Ready and the gate's verdict, each container's
// state and restarts, and each probe's last attempt.
func Panel(w io.Writer, m *timeline.Model) error {
	var b strings.Builder
	b.WriteString(`<table class="panel"><thead><tr><th>container</th><th>state</th><th>restarts</th>`)
	for _, k := range probeKinds {
		fmt.Fprintf(&b, "<th>%s</th>", k)
	}
	b.WriteString("</tr></thead><tbody>")
	for _, p := range m.Pods {
		fmt.Fprintf(&b, `<tr class="pod-row" data-pod="%s"><td colspan="%d">%s</td></tr>`, esc(p.Key), 3+len(probeKinds), esc(podLine(m, p)))
		for _, c := range p.Containers {
			containerRow(&b, p, c)
		}
	}
	b.WriteString("</tbody></table>")
	_, err := io.WriteString(w, b.String())
	return err
}

func podLine(m *timeline.Model, p *timeline.Pod) string {
	parts := []string{"pod " + p.Name}
	if n := len(p.Ready); n > 0 {
		parts = append(parts, p.Ready[n-1].State)
	}
	if n := len(p.Gate); n > 0 {
		g := "gate: " + p.Gate[n-1].State
		if d := p.Gate[n-1].Detail; d != "" {
			g += " (" + d + ")"
		}
		parts = append(parts, g)
	}
	for _, e := range m.Endpoints {
		if e.Pod == p.Key {
			state := "removed"
			if n := len(e.Spans); n > 0 && e.Spans[n-1].Open {
				state = e.Spans[n-1].State
			}
			parts = append(parts, "endpoint "+e.Service+" "+e.Address+": "+state)
		}
	}
	if len(p.Requests) > 0 {
		parts = append(parts, "requests: "+servedFailed(p.Requests))
	}
	return strings.Join(parts, " · ")
}

func containerRow(b *strings.Builder, p *timeline.Pod, c *timeline.Container) {
	state, detail, restarts := "-", "-", "-"
	if n := len(c.Spans); n > 0 {
		state, detail = c.Spans[n-1].State, c.Spans[n-1].Detail
	}
	if c.Last != nil {
		restarts = fmt.Sprint(c.Last.RestartCount)
		if detail == "" {
			detail = timeline.StateDetail(*c.Last)
		}
	}
	name := c.Name
	if c.Sidecar {
		name += " (sidecar)"
	}
	fmt.Fprintf(b, `<tr data-pod="%s" data-container="%s"><td>%s</td><td class="st-%s" data-state="%s">%s</td><td>%s</td>`,
		esc(p.Key), esc(c.Name), esc(name), esc(state), esc(state), esc(detail), restarts)
	for _, k := range probeKinds {
		t, ok := c.LastProbe[k]
		if !ok {
			fmt.Fprintf(b, `<td data-probe="%s">-</td>`, k)
			continue
		}
		words := t.Result
		if t.Message != "" {
			words += ": " + t.Message
		}
		fmt.Fprintf(b, `<td class="r-%s" data-probe="%s" data-result="%s">%s</td>`, esc(t.Result), k, esc(t.Result), esc(words))
	}
	b.WriteString("</tr>")
}

package render

import (
	_ "embed"
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/podgate/podgate/record/timeline"
)

// The picture's geometry, in SVG user units.
const (
	svgWidth   = 1200
	plotX0     = 210 // left of the plot: lane labels before it
	plotX1     = svgWidth - 16
	marksTop   = 34 // room for the marks' labels
	groupHead  = 20 // a pod's or the endpoints' title line
	barH       = 14 // a span bar
	tickRowH   = 8  // one probe kind's row of ticks
	laneGap    = 6
	reqLaneH   = 34 // a request histogram
	axisH      = 26
	legendH    = 2 * legendRowH
	legendRowH = 16
	svgBins    = 240 // request bars the picture aims at when no interval is given
	axisMaxTks = 10
)

// probeKinds are the rows of a container lane's ticks, in order.
var probeKinds = []string{"startup", "readiness", "liveness"}

//go:embed assets/svg.css
var svgCSS string

// SVG writes the picture as a standalone SVG document: a lane per
// container (state spans, probe ticks by result), the pod's readiness
// and the gate's verdict, the requests per pod as a histogram coloured by
// class over the pod's unready stretches, a lane per endpoint, the marks
// as vertical lines, a time axis and a legend. Every element placed in
// time carries data-t0 (and data-t1) in milliseconds from the
// recording's start, so a script can zoom without the server.
func SVG(w io.Writer, m *timeline.Model, o timeline.Options) error {
	from, to := m.Range(o)
	s := &svgWriter{m: m, from: from, to: to, y: marksTop}
	s.body(o)
	_, err := io.WriteString(w, s.document())
	return err
}

type svgWriter struct {
	m        *timeline.Model
	from, to time.Time
	y        int
	peakN    int
	b        strings.Builder
}

// ms is t in milliseconds from the recording's start, as data-t0 says it.
func (s *svgWriter) ms(t time.Time) string {
	return strconv.FormatFloat(float64(t.Sub(s.m.Start).Microseconds())/1000, 'f', -1, 64)
}

// x is t's abscissa in the shown range (outside it: past the plot's
// edges, where the clip hides it).
func (s *svgWriter) x(t time.Time) float64 {
	span := s.to.Sub(s.from).Seconds()
	return plotX0 + t.Sub(s.from).Seconds()/span*(plotX1-plotX0)
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func esc(v string) string { return html.EscapeString(v) }

func (s *svgWriter) printf(format string, args ...any) { fmt.Fprintf(&s.b, format, args...) }

func (s *svgWriter) body(o timeline.Options) {
	for _, p := range s.m.Pods {
		s.pod(p, o)
	}
	if len(s.m.Endpoints) > 0 {
		s.printf(`<g class="group" data-group="endpoints">`)
		s.title("endpoints")
		for _, e := range s.m.Endpoints {
			label := e.Service + " " + e.Address
			if p := s.m.Pod(e.Pod); p != nil {
				label += " (" + p.Name + ")"
			}
			s.printf(`<g class="lane" data-lane="endpoint" data-service="%s" data-address="%s">`, esc(e.Service), esc(e.Address))
			s.spanLane(label, e.Spans, nil)
			s.printf("</g>")
		}
		s.printf("</g>")
	}
	if len(s.m.Unrouted) > 0 {
		s.printf(`<g class="group" data-group="unrouted">`)
		s.title("requests no pod served")
		s.requestLane("", "held, timed out, refused", s.m.Unrouted, nil, o)
		s.printf("</g>")
	}
}

func (s *svgWriter) title(text string) {
	s.printf(`<text class="group-title" x="4" y="%d">%s</text>`, s.y+14, esc(text))
	s.y += groupHead
}

func (s *svgWriter) pod(p *timeline.Pod, o timeline.Options) {
	s.printf(`<g class="group" data-group="pod" data-pod="%s">`, esc(p.Key))
	title := "pod " + p.Name
	if p.Address != "" {
		title += "  " + p.Address
	}
	s.title(title)
	for _, c := range p.Containers {
		s.container(p, c)
	}
	s.printf(`<g class="lane" data-lane="pod" data-pod="%s">`, esc(p.Key))
	s.spanLane("Ready", p.Ready, nil)
	s.printf("</g>")
	if len(p.Gate) > 0 {
		s.printf(`<g class="lane" data-lane="gate" data-pod="%s">`, esc(p.Key))
		s.spanLane("gate verdict", p.Gate, nil)
		s.printf("</g>")
	}
	// Shaded under the requests: where none should be. Not ready, and
	// from a kill until ready again.
	var unready []timeline.Span
	for _, sp := range p.Ready {
		if sp.State != "ready" {
			unready = append(unready, timeline.Span{From: sp.From, To: sp.To, State: "unready", Detail: "not ready"})
		}
	}
	for _, k := range p.Kills {
		to := k.To
		if to.IsZero() {
			to = s.m.End
		}
		unready = append(unready, timeline.Span{From: k.At, To: to, State: "dying", Detail: k.Container + " killed, pod not ready again"})
	}
	s.requestLane(p.Key, "requests", p.Requests, unready, o)
	s.printf("</g>")
}

func (s *svgWriter) container(p *timeline.Pod, c *timeline.Container) {
	var kinds []string
	for _, k := range probeKinds {
		if _, ok := c.LastProbe[k]; ok {
			kinds = append(kinds, k)
		}
	}
	label := c.Name
	if c.Sidecar {
		label += " (sidecar)"
	}
	s.printf(`<g class="lane" data-lane="container" data-pod="%s" data-container="%s">`, esc(p.Key), esc(c.Name))
	s.spanLane(label, c.Spans, kinds)
	top := s.y - laneGap - len(kinds)*tickRowH
	for _, t := range c.Probes {
		row := indexOf(kinds, t.Probe)
		y0 := top + row*tickRowH
		class := "tick r-" + t.Result
		if t.Restart {
			class += " restart"
		}
		tip := fmt.Sprintf("%s %s %s", s.m.Rel(t.At), t.Probe, t.Result)
		if t.Message != "" {
			tip += ": " + t.Message
		}
		x := f1(s.x(t.At))
		s.printf(`<line class="%s" data-probe="%s" data-result="%s" data-t0="%s" x1="%s" x2="%s" y1="%d" y2="%d"><title>%s</title></line>`,
			class, esc(t.Probe), esc(t.Result), s.ms(t.At), x, x, y0+1, y0+tickRowH-1, esc(tip))
	}
	s.printf("</g>")
}

func indexOf(list []string, v string) int {
	for i, x := range list {
		if x == v {
			return i
		}
	}
	return 0
}

// labelRoom is the width, in pixels, a lane's label may take left of the
// plot: it is drawn right-aligned at plotX0-8, so a longer one would start
// left of the picture and be clipped.
const labelRoom = plotX0 - 8 - 4

// laneLabel draws a lane's label, right-aligned before the plot. A label
// too long for the room loses its start (the end of a pod's name and an
// address tell lanes apart), and the whole label is its tooltip.
func (s *svgWriter) laneLabel(y int, label string) {
	shown := fitLeft(label, labelRoom)
	if shown == label {
		s.printf(`<text class="lane-label" x="%d" y="%d">%s</text>`, plotX0-8, y, esc(label))
		return
	}
	s.printf(`<text class="lane-label" x="%d" y="%d">%s<title>%s</title></text>`, plotX0-8, y, esc(shown), esc(label))
}

// fitLeft is label, its start cut for "…" until it is at most room
// pixels wide in the lanes' font (11 px DejaVu Sans, svg.css).
func fitLeft(label string, room float64) string {
	rs := []rune(label)
	if textWidth(rs) <= room {
		return label
	}
	room -= textWidth([]rune("…"))
	for len(rs) > 0 && textWidth(rs) > room {
		rs = rs[1:]
	}
	return "…" + string(rs)
}

// textWidth estimates rs's width at 11 px in DejaVu Sans from its
// glyphs' advance widths (in em), rounded up per class so that the
// estimate is never short: a label estimated to fit does.
func textWidth(rs []rune) float64 {
	const px = 11
	w := 0.0
	for _, r := range rs {
		switch {
		case strings.ContainsRune("ijlI.,:;'|!()[] ", r):
			w += 0.40
		case strings.ContainsRune("mwMW…", r):
			w += 1.0
		case r >= 'A' && r <= 'Z':
			w += 0.80
		default:
			w += 0.66
		}
	}
	return w * px
}

// spanLane draws a lane's label, background and spans, and leaves room
// below the bar for a row of ticks per probe kind.
func (s *svgWriter) spanLane(label string, spans []timeline.Span, tickRows []string) {
	h := barH + len(tickRows)*tickRowH
	s.laneLabel(s.y+barH-3, label)
	for i, k := range tickRows {
		s.printf(`<text class="tick-label" x="%d" y="%d">%s</text>`, plotX0-8, s.y+barH+(i+1)*tickRowH-1, k)
	}
	s.printf(`<rect class="lane-bg" x="%d" y="%d" width="%d" height="%d"/>`, plotX0, s.y, plotX1-plotX0, h)
	s.printf(`<g clip-path="url(#plot)">`)
	for _, sp := range spans {
		x0, x1 := s.x(sp.From), s.x(sp.To)
		tip := fmt.Sprintf("%s %s → %s", sp.State, s.m.Rel(sp.From), s.m.Rel(sp.To))
		if sp.Open {
			tip += " (still)"
		}
		if sp.Detail != "" {
			tip += ": " + sp.Detail
		}
		s.printf(`<rect class="span s-%s" data-state="%s" data-t0="%s" data-t1="%s" x="%s" y="%d" width="%s" height="%d"><title>%s</title></rect>`,
			sp.State, esc(sp.State), s.ms(sp.From), s.ms(sp.To), f1(x0), s.y, f1(max(x1-x0, 0.5)), barH, esc(tip))
	}
	s.printf("</g>")
	s.y += h + laneGap
}

// requestLane draws one histogram: a bar per interval, stacked by class,
// over the stretches in which the pod was not ready (where no bar should
// be).
func (s *svgWriter) requestLane(pod, label string, reqs []timeline.Request, unready []timeline.Span, o timeline.Options) {
	iv := timeline.Interval(o, s.from, s.to, svgBins)
	bins := binRequests(reqs, s.from, iv)
	peak := s.peak(iv)
	s.printf(`<g class="lane" data-lane="requests" data-pod="%s" data-interval-ms="%d">`, esc(pod), iv.Milliseconds())
	s.laneLabel(s.y+reqLaneH/2+4, label)
	s.printf(`<text class="tick-label" x="%d" y="%d">peak %d/%s</text>`, plotX0-8, s.y+reqLaneH/2+14, peak, iv)
	s.printf(`<rect class="lane-bg" x="%d" y="%d" width="%d" height="%d"/>`, plotX0, s.y, plotX1-plotX0, reqLaneH)
	s.printf(`<g clip-path="url(#plot)">`)
	for _, sp := range unready {
		x0, x1 := s.x(sp.From), s.x(sp.To)
		s.printf(`<rect class="%s" data-t0="%s" data-t1="%s" x="%s" y="%d" width="%s" height="%d"><title>%s %s → %s</title></rect>`,
			sp.State, s.ms(sp.From), s.ms(sp.To), f1(x0), s.y, f1(max(x1-x0, 0.5)), reqLaneH, esc(sp.Detail), s.m.Rel(sp.From), s.m.Rel(sp.To))
	}
	for _, b := range bins {
		base := float64(s.y + reqLaneH)
		t1 := b.at.Add(iv)
		x0, x1 := s.x(b.at), s.x(t1)
		if b.held > 0 {
			s.printf(`<rect class="bin-held" data-count="%d" data-t0="%s" data-t1="%s" x="%s" y="%d" width="%s" height="2"><title>%s–%s: %d held for a ready pod first</title></rect>`,
				b.held, s.ms(b.at), s.ms(t1), f1(x0), s.y, f1(max(x1-x0-0.3, 0.5)), s.m.Rel(b.at), s.m.Rel(t1), b.held)
		}
		for _, class := range timeline.Classes {
			n := b.counts[class]
			if n == 0 {
				continue
			}
			h := float64(n) / float64(peak) * (reqLaneH - 2)
			base -= h
			s.printf(`<rect class="bin c-%s" data-class="%s" data-count="%d" data-t0="%s" data-t1="%s" x="%s" y="%s" width="%s" height="%s"><title>%s–%s: %d %s</title></rect>`,
				class, class, n, s.ms(b.at), s.ms(t1), f1(x0), f1(base), f1(max(x1-x0-0.3, 0.5)), f1(h), s.m.Rel(b.at), s.m.Rel(t1), n, class)
		}
	}
	s.printf("</g></g>")
	s.y += reqLaneH + laneGap
}

// bin is one interval's requests, counted by class.
type bin struct {
	at     time.Time
	counts map[string]int
	held   int // requests held before a pod took them
}

// binRequests counts reqs (sorted by Sent) per interval of width iv on a
// grid through from.
func binRequests(reqs []timeline.Request, from time.Time, iv time.Duration) []bin {
	var bins []bin
	for _, r := range reqs {
		k := r.Sent.Sub(from) / iv
		if r.Sent.Before(from) && r.Sent.Sub(from)%iv != 0 {
			k--
		}
		at := from.Add(k * iv)
		if len(bins) == 0 || !bins[len(bins)-1].at.Equal(at) {
			bins = append(bins, bin{at: at, counts: map[string]int{}})
		}
		bins[len(bins)-1].counts[r.Class()]++
		if r.Held > 0 && r.Class() != timeline.ClassHeld {
			bins[len(bins)-1].held++
		}
	}
	return bins
}

// peak is the largest bin of any lane: the histograms share one scale.
func (s *svgWriter) peak(iv time.Duration) int {
	if s.peakN > 0 {
		return s.peakN
	}
	s.peakN = 1
	lanes := [][]timeline.Request{s.m.Unrouted}
	for _, p := range s.m.Pods {
		lanes = append(lanes, p.Requests)
	}
	for _, reqs := range lanes {
		for _, b := range binRequests(reqs, s.from, iv) {
			n := 0
			for _, c := range b.counts {
				n += c
			}
			s.peakN = max(s.peakN, n)
		}
	}
	return s.peakN
}

// marksAndAxis draws the marks across every lane, the time axis and the
// legend below the lanes.
func (s *svgWriter) marksAndAxis() string {
	var b strings.Builder
	bottom := s.y
	b.WriteString(`<g class="marks" clip-path="url(#plot-marks)">`)
	for i, mk := range s.m.Marks {
		x := f1(s.x(mk.At))
		anchor := "start"
		if s.x(mk.At) > plotX1-160 {
			anchor = "end" // the label reads leftwards at the right edge
		}
		fmt.Fprintf(&b, `<g class="mark" data-name="%s"><line class="mark-line" data-t0="%s" x1="%s" x2="%s" y1="%d" y2="%d"/><text class="mark-label" data-t0="%s" x="%s" y="%d" text-anchor="%s">%s</text><title>%s %s</title></g>`,
			esc(mk.Name), s.ms(mk.At), x, x, marksTop-14+14*(i%2), bottom, s.ms(mk.At), x, marksTop-18+14*(i%2), anchor, esc(mk.Name), s.m.Rel(mk.At), esc(mk.Name))
	}
	b.WriteString(`</g>`)
	fmt.Fprintf(&b, `<g class="axis" data-from="%s" data-to="%s" data-y="%d"><line class="axis-line" x1="%d" x2="%d" y1="%d" y2="%d"/>`,
		s.ms(s.from), s.ms(s.to), bottom, plotX0, plotX1, bottom, bottom)
	st := timeline.Step(s.to.Sub(s.from), axisMaxTks)
	first := s.m.Start.Add((s.from.Sub(s.m.Start) + st - 1) / st * st)
	for t := first; !t.After(s.to); t = t.Add(st) {
		x := f1(s.x(t))
		fmt.Fprintf(&b, `<line class="axis-tick" x1="%s" x2="%s" y1="%d" y2="%d"/><text class="axis-label" x="%s" y="%d">%s</text>`,
			x, x, bottom, bottom+5, x, bottom+17, axisLabel(t.Sub(s.m.Start)))
	}
	b.WriteString(`</g>`)
	b.WriteString(legend(bottom + axisH))
	return b.String()
}

// axisLabel is a relative time for the axis: +1:05, +12.5s.
func axisLabel(d time.Duration) string {
	if d < time.Minute {
		return "+" + strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
	}
	return fmt.Sprintf("+%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

func legend(y int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<g class="legend" transform="translate(%d,%d)">`, 4, y)
	x, row := 0, 0
	item := func(class, word string) {
		w := 18 + 6*len(word)
		if x+w > svgWidth-8 {
			x, row = 0, row+1
		}
		fmt.Fprintf(&b, `<rect class="%s" x="%d" y="%d" width="10" height="10"/><text class="legend-label" x="%d" y="%d">%s</text>`, class, x, 2+row*legendRowH, x+13, 11+row*legendRowH, word)
		x += w
	}
	for _, st := range []string{"ready", "running", "not-ready", "waiting", "killing", "terminated", "serving", "terminating"} {
		item("span s-"+st, st)
	}
	x += 8
	for _, r := range []string{"success", "failure", "error"} {
		item("key r-"+r, "probe "+r)
	}
	x += 8
	for _, c := range timeline.Classes {
		item("bin c-"+c, c)
	}
	x += 8
	item("unready", "pod not ready")
	item("dying", "killed until ready")
	b.WriteString(`</g>`)
	return b.String()
}

// document wraps the lanes in the svg element with its style, clips, axis
// and legend.
func (s *svgWriter) document() string {
	lanes := s.b.String()
	tail := s.marksAndAxis()
	height := s.y + axisH + legendH + 4
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" id="timeline" width="%d" height="%d" viewBox="0 0 %d %d" data-start="%s" data-from="%s" data-to="%s" data-end="%s" data-x0="%d" data-x1="%d">`,
		svgWidth, height, svgWidth, height, s.m.Start.Format(time.RFC3339Nano), s.ms(s.from), s.ms(s.to), s.ms(s.m.End), plotX0, plotX1)
	fmt.Fprintf(&b, "<style>%s</style>", svgCSS)
	fmt.Fprintf(&b, `<defs><clipPath id="plot"><rect x="%d" y="0" width="%d" height="%d"/></clipPath><clipPath id="plot-marks"><rect x="%d" y="0" width="%d" height="%d"/></clipPath>`,
		plotX0, plotX1-plotX0, height, plotX0-4, plotX1-plotX0+8, height)
	b.WriteString(`<pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#eceff1"/><line x1="0" y1="0" x2="0" y2="6" stroke="#b0bec5" stroke-width="2"/></pattern>`)
	b.WriteString(`<pattern id="hatch-dying" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)"><rect width="6" height="6" fill="#ffebee"/><line x1="0" y1="0" x2="0" y2="6" stroke="#ef9a9a" stroke-width="2"/></pattern></defs>`)
	b.WriteString(lanes)
	b.WriteString(tail)
	b.WriteString("</svg>\n")
	return b.String()
}

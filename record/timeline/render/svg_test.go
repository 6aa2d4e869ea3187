package render

import (
	"bytes"
	"encoding/xml"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/podgate/podgate/record/timeline"
	"github.com/podgate/podgate/record/timeline/internal/fixtures"
)

// node is an element of the picture, parsed with encoding/xml: the SVG
// must be well-formed XML to stand alone as a file.
type node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []node     `xml:",any"`
	Text    string     `xml:",chardata"`
}

func (n node) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n node) has(name string) bool {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return true
		}
	}
	return false
}

func (n node) classes() []string { return strings.Fields(n.attr("class")) }

// all is every element under n (n included) for which pick holds.
func (n node) all(pick func(node) bool) []node {
	var out []node
	if pick(n) {
		out = append(out, n)
	}
	for _, c := range n.Nodes {
		out = append(out, c.all(pick)...)
	}
	return out
}

func withClass(class string) func(node) bool {
	return func(n node) bool { return slices.Contains(n.classes(), class) }
}

func lanesOf(kind string) func(node) bool {
	return func(n node) bool { return withClass("lane")(n) && n.attr("data-lane") == kind }
}

func parseSVG(t *testing.T, data []byte) node {
	t.Helper()
	var root node
	if err := xml.Unmarshal(data, &root); err != nil {
		t.Fatalf("the SVG is not well-formed XML: %v", err)
	}
	if root.XMLName.Local != "svg" || root.XMLName.Space != "http://www.w3.org/2000/svg" {
		t.Fatalf("root element %v, want svg in the SVG namespace", root.XMLName)
	}
	return root
}

func renderSVG(t *testing.T, s *fixtures.Scenario, o timeline.Options) (*timeline.Model, node) {
	t.Helper()
	h, facts := s.RoundTrip(t, "")
	m, err := timeline.Build(h, facts, o)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := SVG(&out, m, o); err != nil {
		t.Fatal(err)
	}
	return m, parseSVG(t, out.Bytes())
}

func TestPictureHasALanePerContainerEndpointGateAndPod(t *testing.T) {
	tests := []struct {
		name                                                string
		scenario                                            *fixtures.Scenario
		containers, pods, gates, requests, endpoints, marks int
	}{
		{"the gated liveness restart", fixtures.LivenessRestart(), 2, 2, 2, 2, 2, 3},
		{"the restart without a gate", fixtures.KubernetesRestart(), 2, 2, 0, 2, 2, 0},
		// A lane for the requests no pod served.
		{"held and refused requests", fixtures.HeldAndTruncated(), 1, 1, 1, 2, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, svg := renderSVG(t, tt.scenario, timeline.Options{})
			for kind, want := range map[string]int{"container": tt.containers, "pod": tt.pods, "gate": tt.gates, "requests": tt.requests, "endpoint": tt.endpoints} {
				if got := len(svg.all(lanesOf(kind))); got != want {
					t.Errorf("%d %s lanes, want %d", got, kind, want)
				}
			}
			if got := len(svg.all(withClass("mark"))); got != tt.marks {
				t.Errorf("%d marks, want %d", got, tt.marks)
			}
		})
	}
}

// spanStates are the data-state of a lane's spans, in order.
func spanStates(lane node) []string {
	var states []string
	for _, s := range lane.all(withClass("span")) {
		states = append(states, s.attr("data-state"))
	}
	return states
}

func TestPictureLanesMatchTheRecording(t *testing.T) {
	m, svg := renderSVG(t, fixtures.LivenessRestart(), timeline.Options{})
	var webA node
	for _, l := range svg.all(lanesOf("container")) {
		if l.attr("data-pod") == "default/web-a" && l.attr("data-container") == "app" {
			webA = l
		}
	}
	t.Run("a container's spans are its states, the kill included", func(t *testing.T) {
		want := []string{"waiting", "running", "ready", "killing", "terminated", "running", "ready"}
		if got := spanStates(webA); !slices.Equal(got, want) {
			t.Errorf("web-a/app spans %v, want %v", got, want)
		}
	})
	t.Run("a tick per probe attempt, coloured by result, the restart marked", func(t *testing.T) {
		ticks := webA.all(withClass("tick"))
		if want := len(m.Pods[0].Containers[0].Probes); len(ticks) != want {
			t.Fatalf("%d ticks, want %d", len(ticks), want)
		}
		var failures, restarts int
		for _, tk := range ticks {
			if tk.attr("data-result") == "failure" && slices.Contains(tk.classes(), "r-failure") {
				failures++
			}
			if slices.Contains(tk.classes(), "restart") {
				restarts++
			}
		}
		if failures != 3 || restarts != 1 {
			t.Errorf("%d failure ticks and %d restart ticks, want 3 and 1", failures, restarts)
		}
	})
	t.Run("the request bars add up to the requests of each pod", func(t *testing.T) {
		for _, lane := range svg.all(lanesOf("requests")) {
			sum := 0
			for _, b := range lane.all(withClass("bin")) {
				n, err := strconv.Atoi(b.attr("data-count"))
				if err != nil {
					t.Fatal(err)
				}
				sum += n
			}
			p := m.Pod(lane.attr("data-pod"))
			if p == nil || sum != len(p.Requests) {
				t.Errorf("lane %q: bars count %d requests, want the pod's", lane.attr("data-pod"), sum)
			}
		}
	})
	t.Run("where no request should go is shaded", func(t *testing.T) {
		for _, lane := range svg.all(lanesOf("requests")) {
			unready, dying := len(lane.all(withClass("unready"))), len(lane.all(withClass("dying")))
			want := [2]int{1, 0} // not ready before its first Ready
			if lane.attr("data-pod") == "default/web-a" {
				want = [2]int{2, 1} // and around the restart; the kill
			}
			if [2]int{unready, dying} != want {
				t.Errorf("lane %s: %d unready and %d dying stretches, want %v", lane.attr("data-pod"), unready, dying, want)
			}
		}
	})
	t.Run("endpoints and gate verdicts follow their facts", func(t *testing.T) {
		for _, lane := range append(svg.all(lanesOf("endpoint")), svg.all(lanesOf("gate"))...) {
			want := []string{"ready"}
			if lane.attr("data-address") == "10.244.0.2" || lane.attr("data-pod") == "default/web-a" {
				want = []string{"ready", "not-ready", "ready"}
			}
			if got := spanStates(lane); !slices.Equal(got, want) {
				t.Errorf("%s lane %s%s: spans %v, want %v", lane.attr("data-lane"), lane.attr("data-address"), lane.attr("data-pod"), got, want)
			}
		}
	})
	t.Run("every element placed in time says when", func(t *testing.T) {
		for _, n := range svg.all(func(n node) bool { return n.has("data-t0") }) {
			t0, err := strconv.ParseFloat(n.attr("data-t0"), 64)
			if err != nil || t0 < 0 || t0 > 30000 {
				t.Fatalf("%s data-t0=%q: want ms within the recording", n.XMLName.Local, n.attr("data-t0"))
			}
			if n.has("data-t1") {
				if t1, err := strconv.ParseFloat(n.attr("data-t1"), 64); err != nil || t1 < t0 {
					t.Fatalf("%s data-t1=%q before data-t0 %v", n.XMLName.Local, n.attr("data-t1"), t0)
				}
			}
		}
	})
	t.Run("nothing refers outside the file", func(t *testing.T) {
		for _, n := range svg.all(func(node) bool { return true }) {
			for _, a := range n.Attrs {
				if a.Name.Local == "href" || strings.Contains(a.Value, "url(") && !strings.Contains(a.Value, "url(#") {
					t.Errorf("%s %s=%q refers outside the picture", n.XMLName.Local, a.Name.Local, a.Value)
				}
			}
		}
	})
}

func TestPictureRangeIsTheAsked(t *testing.T) {
	_, svg := renderSVG(t, fixtures.LivenessRestart(), timeline.Options{From: 9 * time.Second, To: 23 * time.Second})
	if svg.attr("data-from") != "9000" || svg.attr("data-to") != "23000" || svg.attr("data-end") != "30000" {
		t.Errorf("range data-from=%s data-to=%s data-end=%s, want 9000, 23000, 30000",
			svg.attr("data-from"), svg.attr("data-to"), svg.attr("data-end"))
	}
	var labels []string
	for _, l := range svg.all(withClass("axis-label")) {
		labels = append(labels, strings.TrimSpace(l.Text))
	}
	if len(labels) == 0 || labels[0] != "+10s" || labels[len(labels)-1] != "+22s" {
		t.Errorf("axis labels %v, want +10s … +22s", labels)
	}
	x0, x1 := float64(plotX0), float64(plotX1)
	for _, mk := range svg.all(withClass("mark-line")) {
		x, _ := strconv.ParseFloat(mk.attr("x1"), 64)
		inside := x >= x0 && x <= x1
		if t0 := mk.attr("data-t0"); inside != (t0 == "9500" || t0 == "20600") {
			t.Errorf("mark at %s ms drawn at x=%v; inside the plot: %v", t0, x, inside)
		}
	}
}

// htmlNodes is every element of the page for which pick holds.
func htmlNodes(n *html.Node, pick func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	if n.Type == html.ElementNode && pick(n) {
		out = append(out, n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		out = append(out, htmlNodes(c, pick)...)
	}
	return out
}

func htmlAttr(n *html.Node, name string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val, true
		}
	}
	return "", false
}

func TestPageIsSelfContained(t *testing.T) {
	h, facts := fixtures.LivenessRestart().RoundTrip(t, "liveness restart scenario")
	var out bytes.Buffer
	if err := Recording(&out, "html", h, facts, timeline.Options{}); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	tag := func(name string) func(*html.Node) bool { return func(n *html.Node) bool { return n.Data == name } }
	if n := len(htmlNodes(doc, tag("svg"))); n != 1 {
		t.Errorf("%d svg elements, want the picture inline once", n)
	}
	for _, n := range htmlNodes(doc, func(*html.Node) bool { return true }) {
		for _, a := range []string{"src", "href", "xlink:href"} {
			if v, ok := htmlAttr(n, a); ok {
				t.Errorf("<%s %s=%q>: the page must load nothing", n.Data, a, v)
			}
		}
		if n.Data == "link" {
			t.Errorf("<link> in a page that must load nothing")
		}
	}
	if n := len(htmlNodes(doc, tag("script"))); n != 1 {
		t.Errorf("%d scripts, want the zoom's, inline", n)
	}
	rows := htmlNodes(doc, func(n *html.Node) bool { _, ok := htmlAttr(n, "data-container"); return n.Data == "tr" && ok })
	if len(rows) != 2 {
		t.Errorf("panel has %d container rows, want 2", len(rows))
	}
	for _, want := range []string{"@media print", "<title>podgate timeline — podgate run: liveness restart scenario</title>"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(out.String(), "http://") && !strings.Contains(out.String(), `xmlns="http://www.w3.org/2000/svg"`) {
		t.Errorf("the page names an http:// address besides the SVG namespace")
	}
}

package render

import (
	"bytes"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/podgate/podgate/record/timeline"
	"github.com/podgate/podgate/record/timeline/internal/fixtures"
	"github.com/podgate/podgate/test/headless"
)

var docsScreenshot = flag.Bool("docs-screenshot", false, "also write the page's screenshot to docs/timeline.png")

// pageCounts is what the page shows, counted in the browser's DOM.
type pageCounts struct {
	Containers int `json:"containers"`
	Pods       int `json:"pods"`
	Gates      int `json:"gates"`
	Requests   int `json:"requests"`
	Endpoints  int `json:"endpoints"`
	Spans      int `json:"spans"`
	Ticks      int `json:"ticks"`
	Marks      int `json:"marks"`
	Panel      int `json:"panel"`
}

const countJS = `(() => {
  const n = (s) => document.querySelectorAll(s).length;
  return {containers: n('g.lane[data-lane=container]'), pods: n('g.lane[data-lane=pod]'),
    gates: n('g.lane[data-lane=gate]'), requests: n('g.lane[data-lane=requests]'),
    endpoints: n('g.lane[data-lane=endpoint]'), spans: n('rect.span[data-t0]'),
    ticks: n('line.tick'), marks: n('g.mark'), panel: n('#panel tr[data-container]')};
})()`

// wantCounts is what the page of m must show.
func wantCounts(m *timeline.Model) pageCounts {
	c := pageCounts{Pods: len(m.Pods), Requests: len(m.Pods), Endpoints: len(m.Endpoints), Marks: len(m.Marks)}
	if len(m.Unrouted) > 0 {
		c.Requests++
	}
	for _, p := range m.Pods {
		c.Containers += len(p.Containers)
		c.Panel += len(p.Containers)
		c.Spans += len(p.Ready) + len(p.Gate)
		if len(p.Gate) > 0 {
			c.Gates++
		}
		for _, ctr := range p.Containers {
			c.Spans += len(ctr.Spans)
			c.Ticks += len(ctr.Probes)
		}
	}
	for _, e := range m.Endpoints {
		c.Spans += len(e.Spans)
	}
	return c
}

func servePage(t *testing.T, page []byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestPageInChromium(t *testing.T) {
	h, facts := fixtures.LivenessRestart().RoundTrip(t, "liveness restart scenario")
	m, err := timeline.Build(h, facts, timeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := HTML(&page, m, timeline.Options{}); err != nil {
		t.Fatal(err)
	}
	b := headless.Start(t, 1280, 800)
	b.Do(t, chromedp.Navigate(servePage(t, page.Bytes())))
	b.Poll(t, `document.readyState === "complete" && document.getElementById("from").value !== ""`, 30*time.Second)

	t.Run("the lanes, spans and ticks of the recording", func(t *testing.T) {
		if got, want := headless.Eval[pageCounts](t, b, countJS), wantCounts(m); got != want {
			t.Errorf("the page shows %+v, want %+v", got, want)
		}
	})
	t.Run("a screenshot of the whole page", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "timeline.png")
		cfg := b.Screenshot(t, path)
		size := headless.Eval[[2]int](t, b, `[document.documentElement.scrollWidth, document.documentElement.scrollHeight]`)
		if cfg.Width != size[0] || cfg.Height != size[1] || cfg.Width < 1000 || cfg.Height < 400 {
			t.Errorf("screenshot %d×%d, want the page's %d×%d", cfg.Width, cfg.Height, size[0], size[1])
		}
		if *docsScreenshot {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join("..", "..", "..", "docs", "timeline.png"), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("the range inputs zoom", func(t *testing.T) {
		headless.Eval[bool](t, b, `(() => {
		  const f = document.getElementById("from"), to = document.getElementById("to");
		  f.value = "9"; to.value = "23";
		  to.dispatchEvent(new Event("change"));
		  return true; })()`)
		got := headless.Eval[[2]string](t, b, `[document.getElementById("timeline").getAttribute("data-from"), document.getElementById("timeline").getAttribute("data-to")]`)
		if got != [2]string{"9000", "23000"} {
			t.Errorf("after from 9 to 23 the picture shows %v ms", got)
		}
		// The mark at +9.5 s sits 0.5/14 of the way along the plot.
		x := headless.Eval[float64](t, b, `parseFloat(document.querySelector('g.mark[data-name="web-a: liveness answers 500"] line').getAttribute("x1"))`)
		if want := plotX0 + 0.5/14*(plotX1-plotX0); x < want-1 || x > want+1 {
			t.Errorf("zoomed, the first mark is at x=%v, want %v", x, want)
		}
	})
	t.Run("dragging across the picture zooms to what was dragged over", func(t *testing.T) {
		headless.Eval[bool](t, b, `(document.getElementById("reset").click(), true)`)
		// From the plot's left edge to its middle: the first half.
		r := headless.Eval[[4]float64](t, b, `(() => { const s = document.getElementById("timeline"), r = s.getBoundingClientRect(), k = r.width / s.viewBox.baseVal.width;
		  return [r.left + `+fmt.Sprint(plotX0)+` * k, r.left + `+fmt.Sprint((plotX0+plotX1)/2)+` * k, r.top + 80, k]; })()`)
		b.Do(t,
			chromedp.MouseEvent(chromedp.MousePressed, r[0]+1, r[2], chromedp.ButtonLeft),
			chromedp.MouseEvent(chromedp.MouseMoved, (r[0]+r[1])/2, r[2], chromedp.ButtonLeft),
			chromedp.MouseEvent(chromedp.MouseMoved, r[1], r[2], chromedp.ButtonLeft),
			chromedp.MouseEvent(chromedp.MouseReleased, r[1], r[2], chromedp.ButtonLeft),
		)
		got := headless.Eval[[2]float64](t, b, `[parseFloat(document.getElementById("timeline").getAttribute("data-from")), parseFloat(document.getElementById("timeline").getAttribute("data-to"))]`)
		if got[0] > 200 || got[1] < 14500 || got[1] > 15500 {
			t.Errorf("after dragging over the first half the picture shows %v ms, want about 0–15000", got)
		}
		headless.Eval[bool](t, b, `(document.getElementById("timeline").dispatchEvent(new MouseEvent("dblclick", {bubbles: true})), true)`)
		if to := headless.Eval[string](t, b, `document.getElementById("timeline").getAttribute("data-to")`); to != "30000" {
			t.Errorf("a double click shows up to %s ms, want the whole 30000", to)
		}
	})
	if p := b.Problems(); len(p) > 0 {
		t.Errorf("the page raised script or console errors: %v", p)
	}
}

// A Knative pod's name makes an endpoint's label longer than the room left
// of the plot; right-aligned, it used to start left of the picture, cut.
func TestLongLaneLabelsStayInsideThePicture(t *testing.T) {
	const pod = "hello-00001-deployment-5d8f7b9c4-x2x7z"
	s := &fixtures.Scenario{}
	s.StartPod(0, pod, "10.244.0.12", true)
	s.Request(2, pod, 200, "", 0, false)
	h, facts := s.RoundTrip(t, "a pod with a long name")
	m, err := timeline.Build(h, facts, timeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := HTML(&page, m, timeline.Options{}); err != nil {
		t.Fatal(err)
	}
	b := headless.Start(t, 1280, 800)
	b.Do(t, chromedp.Navigate(servePage(t, page.Bytes())))
	b.Poll(t, `document.readyState === "complete" && document.querySelectorAll("text.lane-label").length > 0`, 30*time.Second)
	outside := headless.Eval[[]string](t, b, `[...document.querySelectorAll("#timeline text.lane-label, #timeline text.tick-label")]
	  .filter(t => t.getBBox().x < 0).map(t => t.textContent)`)
	if len(outside) > 0 {
		t.Errorf("labels starting left of the picture: %q", outside)
	}
	full := headless.Eval[string](t, b, `(() => { const t = document.querySelector('#timeline g[data-lane="endpoint"] text.lane-label title'); return t ? t.textContent : ""; })()`)
	if !strings.Contains(full, pod) {
		t.Errorf("the endpoint label's tooltip is %q, want the whole label with %s", full, pod)
	}
	if p := b.Problems(); len(p) > 0 {
		t.Errorf("the page raised script or console errors: %v", p)
	}
}

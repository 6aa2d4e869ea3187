package headless

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBrowserReportsWhatThePageDid(t *testing.T) {
	tests := []struct {
		name     string
		page     string
		problems []string
	}{
		{"a quiet page", `<p id="done">ok</p>`, nil},
		{"an uncaught exception", `<p id="done">ok</p><script>throw new Error("boom")</script>`, []string{"boom"}},
		{"a console error", `<p id="done">ok</p><script>console.error("bad lane")</script>`, []string{"bad lane"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				_, _ = w.Write([]byte("<!DOCTYPE html><html><body>" + tt.page + "</body></html>"))
			}))
			defer srv.Close()
			b := Start(t, 800, 600)
			b.Do(t, chromedp.Navigate(srv.URL))
			b.Poll(t, `document.getElementById("done") !== null`, 30*time.Second)
			if n := Eval[int](t, b, `document.querySelectorAll("p").length`); n != 1 {
				t.Errorf("Eval counted %d paragraphs, want 1", n)
			}
			cfg := b.Screenshot(t, filepath.Join(t.TempDir(), "page.png"))
			// A page smaller than the window: the shot is the viewport.
			if v := Eval[[2]int](t, b, `[window.innerWidth, window.innerHeight]`); cfg.Width != v[0] || cfg.Height != v[1] || v[0] != 800 {
				t.Errorf("screenshot %d×%d, want the viewport's %d×%d", cfg.Width, cfg.Height, v[0], v[1])
			}
			// Console messages arrive asynchronously.
			deadline := time.Now().Add(10 * time.Second)
			for len(b.Problems()) < len(tt.problems) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			got := b.Problems()
			if len(got) != len(tt.problems) {
				t.Fatalf("problems %q, want %d", got, len(tt.problems))
			}
			for i, want := range tt.problems {
				if !strings.Contains(got[i], want) {
					t.Errorf("problem %q, want one about %q", got[i], want)
				}
			}
		})
	}
}

// Package headless is the real browser of the tests that look at a page:
// headless Chromium (the Debian package, `apt-get install chromium`)
// driven through the DevTools protocol with chromedp, one browser and one
// profile per test, with every script error and console error the page
// raised kept for the test to assert on.
package headless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Wait bounds one step in the browser: generous, for a loaded machine.
const Wait = 60 * time.Second

// Browser is one headless Chromium with one tab.
type Browser struct {
	ctx      context.Context
	mu       sync.Mutex
	problems []string
}

// execPath finds Chromium: the Debian package's `chromium`, or a
// chromium-browser or google-chrome on PATH. Without one, it installs
// Debian's package when it can (root, apt-get): the tests set up what
// they need on a fresh machine, as the control plane's binaries are
// built when missing, never skipped.
func execPath() (string, error) {
	if p, ok := lookChromium(); ok {
		return p, nil
	}
	installOnce.Do(func() { installErr = install() })
	if installErr != nil {
		return "", installErr
	}
	if p, ok := lookChromium(); ok {
		return p, nil
	}
	return "", errors.New("no Chromium on PATH after installing Debian's chromium package")
}

func lookChromium() (string, bool) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, true
		}
	}
	return "", false
}

var (
	installOnce sync.Once
	installErr  error
)

// install runs apt-get for Debian's chromium. Test packages run in
// parallel, each its own process: apt-get waits for another's dpkg lock
// instead of failing on it.
func install() error {
	const manual = "install it: apt-get install -y --no-install-recommends chromium"
	if os.Geteuid() != 0 {
		return errors.New("no Chromium on PATH and not root to install it; " + manual)
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return errors.New("no Chromium on PATH and no apt-get to install it; " + manual)
	}
	wait := "DPkg::Lock::Timeout=900"
	for _, args := range [][]string{
		{"-o", wait, "update"},
		{"-o", wait, "install", "-y", "--no-install-recommends", "chromium"},
	} {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("no Chromium on PATH, and apt-get %s failed: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// Start starts Chromium with a window of width×height CSS pixels, a
// profile of its own in a temporary directory, and, as root needs,
// without the sandbox. The test's cleanup stops it.
func Start(t testing.TB, width, height int) *Browser {
	t.Helper()
	path, err := execPath()
	if err != nil {
		t.Fatal(err)
	}
	profile, err := os.MkdirTemp("", "podgate-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(profile),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.WindowSize(width, height),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("force-device-scale-factor", "1"),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	b := &Browser{ctx: ctx}
	// The console is read from the start: a message is kept only when
	// someone listens when it is sent.
	console := chromedp.Console(ctx)
	reading := make(chan struct{})
	go func() {
		defer close(reading)
		for m, err := range console {
			if err != nil {
				b.problem(fmt.Sprintf("console: %v", err))
				return
			}
			if m.IsException() || m.Type == chromedp.ConsoleError {
				b.problem(fmt.Sprintf("%s at %s:%d: %s", m.Type, m.URL, m.Line+1, m.Text))
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		<-reading
		_ = os.RemoveAll(profile)
	})
	if err := chromedp.Do(b.timeout(t)); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return b
}

// timeout is the browser's context bounded by Wait, cancelled with the
// test.
func (b *Browser) timeout(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(b.ctx, Wait)
	t.Cleanup(cancel)
	return ctx
}

func (b *Browser) problem(p string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// "context canceled" is the end of the test, not the page's fault.
	if strings.Contains(p, context.Canceled.Error()) {
		return
	}
	b.problems = append(b.problems, p)
}

// Problems are the script exceptions and console errors so far.
func (b *Browser) Problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.problems...)
}

// Do runs actions in the tab.
func (b *Browser) Do(t testing.TB, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.timeout(t), actions...); err != nil {
		t.Fatalf("in the browser: %v", err)
	}
}

// Eval evaluates a JavaScript expression in the page.
func Eval[T any](t testing.TB, b *Browser, js string) T {
	t.Helper()
	v, err := chromedp.Run(b.timeout(t), chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

// Poll evaluates a JavaScript expression until it is true, every 20 ms,
// for at most within.
func (b *Browser) Poll(t testing.TB, js string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if Eval[bool](t, b, js) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not true within %s; problems: %v", js, within, b.Problems())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Screenshot writes a PNG of the whole page to path and returns its size.
func (b *Browser) Screenshot(t testing.TB, path string) image.Config {
	t.Helper()
	data, err := chromedp.Run(b.timeout(t), chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podgate/podgate/record"
)

// timelineRecording writes a small recording with record.Writer: a pod
// whose liveness probe fails twice and restarts it, requests to it.
func timelineRecording(t *testing.T) string {
	t.Helper()
	start := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	at := func(sec float64) time.Time { return start.Add(time.Duration(sec * float64(time.Second))) }
	path := filepath.Join(t.TempDir(), "run.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := record.NewWriter(f, record.Header{Source: "podgate run", Started: start, Detail: "cli test"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	pod := func(sec float64, f record.Fact) {
		f.Time, f.Namespace, f.Pod = at(sec), "default", "web-0"
		w.Record(f)
	}
	ready := true
	pod(0.5, record.Fact{Kind: record.KindContainer, Container: "app", State: &record.State{State: "running", Ready: true, ContainerID: "a"}})
	pod(0.6, record.Fact{Kind: record.KindEndpoint, Endpoint: &record.Endpoint{Service: "web", Slice: "web-1", Address: "127.0.10.2", Ready: &ready}})
	for i, sec := range []float64{2, 3} {
		pod(sec, record.Fact{Kind: record.KindProbe, Container: "app", Probe: &record.Probe{Probe: "liveness", Result: "failure", Message: "HTTP probe failed with statuscode: 500", Restart: i == 1}})
	}
	pod(3, record.Fact{Kind: record.KindEvent, Container: "app", Event: &record.Event{Type: "Normal", Reason: "Killing", Message: "Container app failed liveness probe, will be restarted", Object: "Pod/web-0"}})
	pod(1, record.Fact{Kind: record.KindRequest, Request: &record.Request{ID: 1, Target: "default/web", Start: at(0.9), Status: 200, Latency: 100 * time.Millisecond}})
	w.Record(record.Fact{Time: at(4), Kind: record.KindMark, Mark: &record.Mark{Name: "done"}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTimelineCommand(t *testing.T) {
	rec := timelineRecording(t)
	dir := t.TempDir()
	data, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, body []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	badLine3 := write("bad.jsonl", bytes.Join([][]byte{lines[0], lines[1], []byte("{\"t\":\n"), lines[2]}, nil))
	cut := write("cut.jsonl", data[:len(data)-7])
	notOne := write("not.jsonl", []byte("hello\n"))
	htmlOut := filepath.Join(dir, "out.html")
	tests := []struct {
		name        string
		args        []string
		stdin       string
		code        int
		stdout      string
		stderr      string
		file, inOut string
	}{
		{"the table", []string{"timeline", rec}, "", exitOK, "app: liveness failed 2× in 1s (HTTP probe failed with statuscode: 500) → restart", "", "", ""},
		{"the kill's question answered", []string{"timeline", rec}, "", exitOK, "requests sent to web-0 while not ready or being killed (from +00:03.000 on, never ready again): 0", "", "", ""},
		{"from standard input", []string{"timeline", "-"}, string(data), exitOK, "Killing: Container app failed liveness probe", "", "", ""},
		{"the picture alone", []string{"timeline", rec, "--format", "svg"}, "", exitOK, `<svg xmlns="http://www.w3.org/2000/svg"`, "", "", ""},
		{"a page to a file", []string{"timeline", rec, "--format", "html", "-o", htmlOut}, "", exitOK, "", "", htmlOut, "<!DOCTYPE html>"},
		{"a window of it", []string{"timeline", rec, "--from", "2s", "--to", "3500ms", "--interval", "500ms"}, "", exitOK, "showing +00:02.000 to +00:03.500", "", "", ""},
		{"a recording podgate was killed writing", []string{"timeline", cut}, "", exitOK, "Killing", "last line (8) is cut short", "", ""},
		{"no file", []string{"timeline"}, "", exitUsage, "", "accepts 1 arg(s), received 0", "", ""},
		{"an unknown format", []string{"timeline", rec, "--format", "png"}, "", exitUsage, "", `--format "png": want one of text, html, svg`, "", ""},
		{"to before from", []string{"timeline", rec, "--from", "5s", "--to", "1s"}, "", exitUsage, "", "--to 1s must be after --from 5s", "", ""},
		{"a malformed duration", []string{"timeline", rec, "--interval", "often"}, "", exitUsage, "", `invalid argument "often"`, "", ""},
		{"a missing file", []string{"timeline", filepath.Join(dir, "nope.jsonl")}, "", exitInvalid, "", "no such file or directory", "", ""},
		{"not a recording", []string{"timeline", notOne}, "", exitInvalid, "", "recording line 1", "", ""},
		{"a bad line names its number", []string{"timeline", badLine3}, "", exitInvalid, "", "bad.jsonl: recording line 3:", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := runIO(tt.args, strings.NewReader(tt.stdin), &out, &errOut)
			if code != tt.code || !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errOut.String(), tt.stderr) {
				t.Errorf("exit %d, stdout %q…, stderr %q; want %d, %q, %q", code, firstLines(out.String()), errOut.String(), tt.code, tt.stdout, tt.stderr)
			}
			if tt.file != "" {
				got, err := os.ReadFile(tt.file)
				if err != nil || !strings.Contains(string(got), tt.inOut) {
					t.Errorf("%s: %v, want it with %q", tt.file, err, tt.inOut)
				}
			}
		})
	}
}

func firstLines(s string) string {
	if len(s) > 300 {
		return s[:300]
	}
	return s
}

func TestRunUIIsLoopbackOnly(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"run", "-f", "../../examples/hello.yaml", "--ui", "0.0.0.0:9800"}, &out, &errOut)
	if want := `--ui "0.0.0.0:9800": 0.0.0.0 is not a loopback address`; code != exitUsage || !strings.Contains(errOut.String(), want) {
		t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut.String(), exitUsage, want)
	}
}

var runUILine = regexp.MustCompile(`podgate: timeline on (http://127\.0\.0\.1:\d+)\n`)

func TestRunServesTheLiveTimeline(t *testing.T) {
	bin := podgateBinary(t)
	r := runStart(t, bin, "-f", "../../examples/hello.yaml", "--pod-cidr", "127.0.147.0/24", "--ui", "127.0.0.1:0")
	url := r.waitFor(r.errOut, runUILine)[1]
	resp, err := http.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `data-live="events"`) {
		t.Errorf("GET / = %d, want the live page", resp.StatusCode)
	}
	events, err := http.Get(url + "/events")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(events.Body)
	sc.Buffer(nil, 16<<20)
	if !sc.Scan() || sc.Text() != "event: render" || !sc.Scan() || !strings.HasPrefix(sc.Text(), `data: {"svg":"\u003csvg`) {
		t.Errorf("the event stream starts %q, want a render event with the picture", sc.Text())
	}
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// The open stream must not hold podgate up.
	if code := r.exit(); code != 0 {
		t.Errorf("exit code %d after SIGINT, want 0", code)
	}
	events.Body.Close()
}

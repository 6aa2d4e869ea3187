package record

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func sample() []Fact {
	no, yes := false, true
	return []Fact{
		{Time: t0.Add(1 * time.Second), Kind: KindProbe, Namespace: "default", Pod: "web-1", Container: "app",
			Probe: &Probe{Probe: "liveness", Result: "failure", Message: "HTTP probe failed with statuscode: 500", State: "failure", Restart: true}},
		{Time: t0.Add(2 * time.Second), Kind: KindEndpoint, Namespace: "default", Pod: "web-1",
			Endpoint: &Endpoint{Service: "web", Slice: "web-abc", Address: "10.244.0.2", Ready: &no, Serving: &no, Terminating: &yes}},
		{Time: t0.Add(3 * time.Second), Kind: KindRequest, Pod: "web-2",
			Request: &Request{ID: 7, Target: "default/web", Start: t0.Add(2500 * time.Millisecond), Status: 200, Latency: 500 * time.Millisecond}},
		{Time: t0.Add(4 * time.Second), Kind: KindMark, Mark: &Mark{Name: "toggled"}},
	}
}

func TestAWrittenRecordingReadsBackTheSame(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Source: "podgate run", Started: t0}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range sample() {
		w.Record(f)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	h, facts, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if h.Format != FormatName || h.Version != Version || h.Source != "podgate run" || !h.Started.Equal(t0) {
		t.Errorf("header %+v", h)
	}
	want := sample()
	if len(facts) != len(want) {
		t.Fatalf("read %d facts, wrote %d", len(facts), len(want))
	}
	for i := range want {
		if facts[i].Kind != want[i].Kind || !facts[i].Time.Equal(want[i].Time) {
			t.Errorf("fact %d: %+v, want %+v", i, facts[i], want[i])
		}
	}
	if got := facts[0].Probe; *got != *want[0].Probe {
		t.Errorf("probe %+v, want %+v", got, want[0].Probe)
	}
	if got := facts[2].Request; *got != *want[2].Request {
		t.Errorf("request %+v, want %+v", got, want[2].Request)
	}
	if !*facts[1].Endpoint.Terminating || *facts[1].Endpoint.Ready {
		t.Errorf("endpoint %+v", facts[1].Endpoint)
	}
}

func TestTheSizeBoundEndsWithATruncatedLine(t *testing.T) {
	var buf bytes.Buffer
	const limit = 2048
	w, err := NewWriter(&buf, Header{Source: "podgate run", Started: t0}, limit)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		w.Record(Fact{Time: t0.Add(time.Duration(i) * time.Millisecond), Kind: KindMark, Mark: &Mark{Name: strings.Repeat("x", 40)}})
	}
	if !w.Truncated() {
		t.Fatal("a recording far over its bound does not say it was truncated")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.Len() > limit {
		t.Errorf("recording is %d bytes, over its bound of %d", buf.Len(), limit)
	}
	_, facts, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	last := facts[len(facts)-1]
	if last.Kind != KindTruncated || last.Truncated.Limit != limit || !strings.Contains(last.Truncated.Message, "size limit of 2048 bytes") {
		t.Errorf("last fact %+v, want the truncated line", last)
	}
	for _, f := range facts[:len(facts)-1] {
		if f.Kind != KindMark {
			t.Fatalf("fact before the truncation is %q", f.Kind)
		}
	}
}

func TestOnTruncateIsCalledOnceWhenTheBoundIsHit(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Source: "podgate run", Started: t0}, 1024)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	w.OnTruncate(func() { calls++ })
	mark := Fact{Time: t0, Kind: KindMark, Mark: &Mark{Name: strings.Repeat("x", 100)}}
	w.Record(mark)
	if calls != 0 {
		t.Fatalf("called %d times under the bound", calls)
	}
	for range 50 {
		w.Record(mark)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("called %d times, want once", calls)
	}
}

func TestABoundTooSmallForTheHeaderIsRefused(t *testing.T) {
	if _, err := NewWriter(&bytes.Buffer{}, Header{}, 100); err == nil || !strings.Contains(err.Error(), "too small") {
		t.Errorf("err = %v, want too small", err)
	}
	if _, err := NewWriter(&bytes.Buffer{}, Header{}, -1); err == nil {
		t.Error("a negative bound is accepted")
	}
}

func TestFactsReachTheFileWithoutClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := NewWriter(f, Header{Source: "podgate run"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Record(sample()[0])
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, facts, err := Read(bytes.NewReader(data)); err == nil && len(facts) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fact never reached the file; it holds %q", data)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestReadErrorsNameTheLine(t *testing.T) {
	header := `{"t":"2026-11-25T12:00:00Z","kind":"header","header":{"format":"podgate.dev/recording","version":1,"source":"x","started":"2026-11-25T12:00:00Z"}}`
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "empty"},
		{"no header", `{"t":"2026-11-25T12:00:00Z","kind":"mark","mark":{"name":"x"}}`, "line 1: not a podgate recording"},
		{"other format", strings.Replace(header, "podgate.dev/recording", "other", 1), `format "other"`},
		{"newer version", strings.Replace(header, `"version":1`, `"version":2`, 1), "version 2"},
		{"bad json", header + "\n{", "line 2"},
		{"unknown kind", header + "\n" + `{"t":"2026-11-25T12:00:00Z","kind":"x"}`, `line 2: unknown fact kind "x"`},
		{"missing payload", header + "\n" + `{"t":"2026-11-25T12:00:00Z","kind":"probe"}`, `line 2: fact of kind "probe" without`},
		{"two payloads", header + "\n" + `{"t":"2026-11-25T12:00:00Z","kind":"mark","mark":{"name":"x"},"gate":{"ready":true}}`, `carries a "gate" payload`},
		{"no time", header + "\n" + `{"kind":"mark","mark":{"name":"x"}}`, "without a time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Read(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestSortedKeepsFileOrderForTies(t *testing.T) {
	facts := []Fact{
		{Time: t0.Add(2 * time.Second), Kind: KindMark, Mark: &Mark{Name: "b"}},
		{Time: t0.Add(1 * time.Second), Kind: KindMark, Mark: &Mark{Name: "a"}},
		{Time: t0.Add(2 * time.Second), Kind: KindMark, Mark: &Mark{Name: "c"}},
	}
	var names []string
	for _, f := range Sorted(facts) {
		names = append(names, f.Mark.Name)
	}
	if strings.Join(names, "") != "abc" {
		t.Errorf("sorted %v, want a b c", names)
	}
}

func TestALiveLogHandsOutWhatCameAfter(t *testing.T) {
	l := NewLog(3)
	facts, next, changed := l.Since(0)
	if len(facts) != 0 || next != 0 {
		t.Fatalf("empty log: %d facts, next %d", len(facts), next)
	}
	for i := 0; i < 5; i++ {
		l.Record(Fact{Time: t0, Kind: KindMark, Mark: &Mark{Name: string(rune('a' + i))}})
	}
	select {
	case <-changed:
	default:
		t.Fatal("a record did not wake the reader")
	}
	facts, next, _ = l.Since(0)
	if len(facts) != 3 || facts[0].Mark.Name != "c" || next != 5 {
		t.Fatalf("after 5 records into 3 places: %d facts from %q, next %d", len(facts), facts[0].Mark.Name, next)
	}
	facts, next, _ = l.Since(4)
	if len(facts) != 1 || facts[0].Mark.Name != "e" || next != 5 {
		t.Fatalf("since 4: %v, next %d", facts, next)
	}
}

func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Header{Source: "fuzz", Started: t0}, 0)
	for _, fact := range sample() {
		w.Record(fact)
	}
	_ = w.Close()
	f.Add(buf.Bytes())
	f.Add([]byte("{}\n{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, facts, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		// What reads without error writes back and reads again the same.
		var out bytes.Buffer
		w, werr := NewWriter(&out, h, 0)
		if werr != nil {
			t.Fatal(werr)
		}
		for _, fact := range facts {
			w.Record(fact)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		_, again, err := Read(&out)
		if err != nil || len(again) != len(facts) {
			t.Fatalf("rewritten recording: %d facts, err %v; had %d", len(again), err, len(facts))
		}
	})
}

func TestParseLimit(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int64
		wantErr string
	}{
		{"256Mi", 256 << 20, ""},
		{"1000000", 1000000, ""},
		{"0", 0, ""},
		{"4Ki", 4096, ""},
		{"1k", 0, "at least 4096 bytes"},
		{"-1", 0, "0 or more"},
		{"lots", 0, "want a size in bytes"},
		{"1.5", 0, "whole number of bytes"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseLimit(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("ParseLimit(%q) = %d, %v; want an error with %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseLimit(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestCreateLeavesNoFileWhenTheBoundIsTooSmall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	if _, err := Create(path, Header{Source: "podgate run"}, 100); err == nil {
		t.Fatal("a bound of 100 bytes is accepted")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the file is left behind: %v", err)
	}
	f, err := Create(path, Header{Source: "podgate run"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Record(sample()[0])
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, facts, err := Read(bytes.NewReader(data)); err != nil || len(facts) != 1 {
		t.Errorf("read back %d facts, %v", len(facts), err)
	}
}

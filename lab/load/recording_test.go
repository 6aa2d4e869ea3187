package load_test

import (
	"strings"
	"testing"
	"time"

	"github.com/podgate/podgate/lab/load"
)

func TestRecordingVerdicts(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	req := func(startMS, durMS, status int, err, body string) load.Request {
		return load.Request{Start: at(startMS), Duration: time.Duration(durMS) * time.Millisecond, Status: status, Err: err, Body: body}
	}
	// A service out of service from 100 ms (seen not ready) to 300 ms
	// (toggled back): the timeline every hold scenario judges.
	rec := &load.Recording{Requests: []load.Request{
		req(0, 5, 200, "", "pod-a"),                         // before: served
		req(90, 20, 200, "", "pod-a"),                       // in flight across 100: sent before, served
		req(120, 250, 200, "", "pod-a"),                     // held across 300, released
		req(150, 100, 504, "", "activator request timeout"), // held, timed out
		req(200, 50, 200, "", "pod-a"),                      // served while out of service: a violation
		req(310, 2, 200, "", "pod-b"),                       // after: served
		req(320, 1, 0, "connection refused", ""),            // transport error
		req(330, 1, 502, "", "bad gateway"),
	}}

	names := func(qs []load.Request) string {
		var b []string
		for _, q := range qs {
			b = append(b, q.Start.Sub(t0).String())
		}
		return strings.Join(b, ",")
	}
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"failures are non-2xx and transport errors", names(rec.Failures()), "150ms,320ms,330ms"},
		{"started between is half-open by start", names(rec.StartedBetween(at(90), at(200))), "90ms,120ms,150ms"},
		{"served between finds 2xx sent after from and done before to", names(rec.ServedBetween(at(100), at(300))), "200ms"},
		{"released finds 2xx sent before at and done after it", names(rec.Released(at(100), at(300))), "120ms"},
		{"with status matches code and body prefix", names(rec.WithStatus(504, "activator request")), "150ms"},
		{"with status ignores another body", names(rec.WithStatus(504, "request timeout")), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}

	t.Run("counts by outcome", func(t *testing.T) {
		c := rec.Counts()
		if c["200"] != 5 || c["504"] != 1 || c["502"] != 1 || c["error"] != 1 || len(c) != 4 {
			t.Errorf("counts = %v", c)
		}
	})
	t.Run("succeeded after needs a 2xx sent at or after t", func(t *testing.T) {
		if !rec.SucceededAfter(at(310)) {
			t.Error("a request sent at 310 ms was served")
		}
		if rec.SucceededAfter(at(311)) {
			t.Error("no request sent after 311 ms was served; the one held across it does not count")
		}
	})
	t.Run("summary lists counts and failures relative to the origin", func(t *testing.T) {
		s := rec.Summary(t0)
		for _, want := range []string{"8 requests:", "200×5", "error×1", "worker 0 at +320ms for 1ms: error connection refused", `504 "activator request timeout"`} {
			if !strings.Contains(s, want) {
				t.Errorf("summary lacks %q:\n%s", want, s)
			}
		}
	})
}

func TestRequestOutcome(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  load.Request
		ok   bool
		out  string
	}{
		{"a 200 is ok", load.Request{Status: 200}, true, "200"},
		{"a 204 is ok", load.Request{Status: 204}, true, "204"},
		{"a 304 is not", load.Request{Status: 304}, false, "304"},
		{"a 503 is not", load.Request{Status: 503}, false, "503"},
		{"a body cut short is an error despite its 200", load.Request{Status: 200, Err: "unexpected EOF"}, false, "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.req.OK() != tc.ok || tc.req.Outcome() != tc.out {
				t.Errorf("OK() = %t, Outcome() = %q; want %t, %q", tc.req.OK(), tc.req.Outcome(), tc.ok, tc.out)
			}
		})
	}
}

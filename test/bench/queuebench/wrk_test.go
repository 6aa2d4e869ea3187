package main

import (
	"testing"
	"time"
)

// wrk 4.1.0's report of a run whose every answer was a 404, with a
// socket error line added as wrk prints it when there are any.
const wrkReport = `Running 1s test @ http://127.0.0.1:18765/nonexist
  2 threads and 4 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    18.80ms   42.57ms 212.54ms   88.72%
    Req/Sec   123.67     48.89   170.00     88.89%
  Latency Distribution
     50%  812.00us
     75%    6.01ms
     90%   72.49ms
     99%  178.91ms
  228 requests in 1.01s, 115.78KB read
  Socket errors: connect 1, read 2, write 0, timeout 3
  Non-2xx or 3xx responses: 228
Requests/sec:    225.52
Transfer/sec:    114.52KB
`

func TestParseWrkReadsCountsLatencyAndFailures(t *testing.T) {
	r, err := parseWrk(wrkReport)
	if err != nil {
		t.Fatal(err)
	}
	want := wrkResult{requests: 228, window: 1010 * time.Millisecond, bad: 228 + 6, p50: 812 * time.Microsecond, p99: 178910 * time.Microsecond}
	if r != want {
		t.Errorf("parseWrk = %+v, want %+v", r, want)
	}
}

func TestParseWrkRefusesAReportWithoutLatencies(t *testing.T) {
	for name, out := range map[string]string{
		"empty":                  "",
		"no latency lines":       "  5 requests in 1.00s, 1KB read\n",
		"no count":               "     50%  1.00ms\n     99%  2.00ms\n",
		"a latency with no unit": "  5 requests in 1.00s, 1KB read\n     50%  1.00\n     99%  2.00ms\n",
	} {
		t.Run(name, func(t *testing.T) {
			if r, err := parseWrk(out); err == nil {
				t.Errorf("parseWrk accepted it: %+v", r)
			}
		})
	}
}

func TestWrkDurations(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"812.00us": 812 * time.Microsecond,
		"1.23ms":   1230 * time.Microsecond,
		"2.00s":    2 * time.Second,
		"1.50m":    90 * time.Second,
	} {
		got, err := parseWrkDuration(in)
		if err != nil || got != want {
			t.Errorf("parseWrkDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "ms", "-1ms", "1.0h", "NaNms"} {
		if d, err := parseWrkDuration(in); err == nil {
			t.Errorf("parseWrkDuration(%q) = %v, want an error", in, d)
		}
	}
}

func TestFixedRateRunOffersTheRate(t *testing.T) {
	for _, rate := range []float64{100, 440, 1800, 9000} {
		w := fixedRateRun(rate, time.Second)
		offered := float64(w.conns) * 1000 / float64(w.delayMS)
		if offered < rate*0.9 || offered > rate*1.1 {
			t.Errorf("rate %.0f: %d connections waiting %d ms offer %.0f/s", rate, w.conns, w.delayMS, offered)
		}
	}
}

func FuzzParseWrk(f *testing.F) {
	f.Add(wrkReport)
	f.Add("  1 requests in 1s,\n 50% 1us\n 99% 1m\n")
	f.Fuzz(func(t *testing.T, out string) {
		r, err := parseWrk(out)
		if err == nil && (r.requests < 0 || r.p50 < 0 || r.p99 < 0) {
			t.Errorf("parseWrk(%q) = %+v: negative figures accepted", out, r)
		}
	})
}

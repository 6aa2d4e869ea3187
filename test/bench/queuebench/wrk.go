package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ensureWrk finds wrk, installing Debian's package when it is missing
// (as root, as the tests install Chromium).
func ensureWrk(ctx context.Context) (string, error) {
	if p, err := exec.LookPath("wrk"); err == nil {
		return p, nil
	}
	fmt.Println("installing wrk (Debian's package) …")
	for _, args := range [][]string{
		{"-o", "DPkg::Lock::Timeout=900", "update"},
		{"-o", "DPkg::Lock::Timeout=900", "install", "-y", "--no-install-recommends", "wrk"},
	} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("apt-get %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	return exec.LookPath("wrk")
}

// wrkRun is one run of wrk.
type wrkRun struct {
	conns    int
	duration time.Duration
	delayMS  int    // > 0: each connection waits this long between requests
	host     string // Host header, "" for the URL's
}

// wrkResult is what wrk printed.
type wrkResult struct {
	requests int64
	window   time.Duration
	bad      int64 // non-2xx/3xx answers and socket errors
	p50, p99 time.Duration
}

func (r wrkResult) rate() float64 { return float64(r.requests) / r.window.Seconds() }

// run runs wrk against url (two threads, the connections split between
// them, latency percentiles on).
func (w wrkRun) run(ctx context.Context, wrk, dir, url string) (wrkResult, error) {
	args := []string{"-t", "2", "-c", strconv.Itoa(max(w.conns, 2)), "-d", fmt.Sprintf("%.0fs", w.duration.Seconds()), "--latency"}
	if w.host != "" {
		args = append(args, "-H", "Host: "+w.host)
	}
	if w.delayMS > 0 {
		// A fixed rate with wrk's own hook: a connection waits delay()
		// milliseconds after each answer. The latency wrk records starts
		// when the request is written, after the wait.
		script := filepath.Join(dir, fmt.Sprintf("delay-%d.lua", w.delayMS))
		if err := os.WriteFile(script, fmt.Appendf(nil, "function delay()\n  return %d\nend\n", w.delayMS), 0o644); err != nil {
			return wrkResult{}, err
		}
		args = append(args, "-s", script)
	}
	args = append(args, url)
	cmd := exec.CommandContext(ctx, wrk, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	res, err := parseWrk(string(out))
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return res, nil
}

// parseWrk reads wrk 4's report: "N requests in 5.00s, …", the latency
// distribution's 50% and 99% lines, and the error lines.
func parseWrk(out string) (wrkResult, error) {
	var r wrkResult
	var haveCount, have50, have99 bool
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 4 && f[1] == "requests" && f[2] == "in":
			n, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil || n < 0 {
				return r, fmt.Errorf("request count %q: not a count", f[0])
			}
			d, err := time.ParseDuration(strings.TrimSuffix(f[3], ","))
			if err != nil || d <= 0 {
				return r, fmt.Errorf("window %q: not a duration", f[3])
			}
			r.requests, r.window, haveCount = n, d, true
		case len(f) == 2 && (f[0] == "50%" || f[0] == "99%"):
			d, err := parseWrkDuration(f[1])
			if err != nil {
				return r, err
			}
			if f[0] == "50%" {
				r.p50, have50 = d, true
			} else {
				r.p99, have99 = d, true
			}
		case len(f) >= 5 && f[0] == "Non-2xx":
			n, _ := strconv.ParseInt(f[len(f)-1], 10, 64)
			r.bad += n
		case len(f) >= 3 && f[0] == "Socket" && f[1] == "errors:":
			// "Socket errors: connect 0, read 0, write 0, timeout 0"
			for i := 2; i+1 < len(f); i += 2 {
				n, _ := strconv.ParseInt(strings.TrimSuffix(f[i+1], ","), 10, 64)
				r.bad += n
			}
		}
	}
	if !haveCount || !have50 || !have99 {
		return r, errors.New("no request count or latency distribution in wrk's output")
	}
	return r, nil
}

// parseWrkDuration reads wrk's "812.00us", "1.23ms", "2.00s", "1.50m".
func parseWrkDuration(s string) (time.Duration, error) {
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"us", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
				return 0, fmt.Errorf("latency %q: not a duration", s)
			}
			return time.Duration(f * float64(u.unit)), nil
		}
	}
	return 0, fmt.Errorf("latency %q: no unit", s)
}

// fixedRateRun is the wrk run that offers about rate requests/s: every
// connection waits 10 ms between requests (longer below 200/s: wrk's two
// threads need two connections), so rate/100 connections. The answer's
// own latency, well under a millisecond at these loads, slows it by a few
// per cent at most; the achieved rate is printed.
func fixedRateRun(rate float64, d time.Duration) wrkRun {
	delay := 10
	if rate > 0 && rate < 200 {
		delay = int(math.Round(2000 / rate))
	}
	return wrkRun{conns: max(2, int(math.Round(rate*float64(delay)/1000))), duration: d, delayMS: delay}
}

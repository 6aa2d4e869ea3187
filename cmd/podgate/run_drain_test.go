package main

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// How `podgate run` stops: the front door is the pods' only way in, so
// once it sends a pod nothing more and nothing is in flight there, the
// pod's gate need not wait out its quiet period (30 s for hello.yaml).

var runFrontDoor = regexp.MustCompile(`front door on http://(127\.0\.0\.1:\d+)`)

// runStopBound is how long a stop with nothing in flight may take on a
// loaded machine: well below the 30 s quiet period it no longer waits.
const runStopBound = 15 * time.Second

// frontDoorGet sends one request for Host hello.default.example.com
// through the front door at addr.
func frontDoorGet(addr, path string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = "hello.default.example.com"
	client := &http.Client{Timeout: runWait, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func TestRunStopsWithoutWaitingOutTheQuietPeriod(t *testing.T) {
	bin := podgateBinary(t)
	r := runStart(t, bin, "-f", "../../examples/hello.yaml", "--pod-cidr", "127.0.56.0/24")
	door := r.waitFor(r.errOut, runFrontDoor)[1]
	p := r.waitPod("ready", runPodReady)
	// Traffic first: the quiet period would count from this request.
	if code, body, err := frontDoorGet(door, "/"); err != nil || code != 200 || !strings.Contains(body, p.Name) {
		t.Fatalf("request through the front door: %d %q %v", code, body, err)
	}

	start := time.Now()
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := r.exit(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if took := time.Since(start); took > runStopBound {
		t.Errorf("podgate run took %s to stop, want well below the 30 s quiet period (bound %s)", took, runStopBound)
	} else {
		t.Logf("stopped in %s", took.Round(time.Millisecond))
	}
	gate := p.Name + "/podgate | "
	if !strings.Contains(r.out(), gate) || !strings.Contains(r.out(), "drained: the activator, this pod's only router, no longer routes here") {
		t.Errorf("the gate did not end its drain on the front door's word:\n%s", r.out())
	}
	// A terminating pod's readiness failures are logged once, not every
	// second of the drain.
	_, stopping, _ := strings.Cut(r.errOut(), "stopping pods gracefully")
	if n := strings.Count(stopping, "Readiness probe failed"); n > 1 {
		t.Errorf("%d readiness failures logged while stopping, want at most one", n)
	}
}

func TestRunStopWaitsForARequestInFlight(t *testing.T) {
	bin := podgateBinary(t)
	r := runStart(t, bin, "-f", "../../examples/hello.yaml", "--pod-cidr", "127.0.57.0/24")
	door := r.waitFor(r.errOut, runFrontDoor)[1]
	p := r.waitPod("ready", runPodReady)

	type result struct {
		code int
		body string
		err  error
		at   time.Time
	}
	done := make(chan result, 1)
	go func() {
		code, body, err := frontDoorGet(door, "/slow?for=5s")
		done <- result{code, body, err, time.Now()}
	}()
	waitInFlight(t, p, 1)
	start := time.Now()
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil || res.code != 200 || !strings.Contains(res.body, p.Name) {
		t.Fatalf("the request in flight at the stop: %d %q %v; want 200 from the app", res.code, res.body, res.err)
	}
	if code := r.exit(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if took := time.Since(start); took > runStopBound {
		t.Errorf("podgate run took %s to stop", took)
	}
	out := r.out()
	gate := p.Name + "/podgate | "
	// The gate drained with the request in flight, and ended only once
	// the front door had nothing in flight there.
	if !regexp.MustCompile(regexp.QuoteMeta(gate) + `.*terminating: failing health checks, draining.*inFlight=1`).MatchString(out) {
		t.Errorf("the gate did not start its drain with the request in flight:\n%s", out)
	}
	if !strings.Contains(out, gate) || !strings.Contains(out, "drained: the activator") {
		t.Errorf("the gate did not end its drain on the front door's word:\n%s", out)
	}
}

// waitInFlight waits until the pod's gate counts n requests in flight.
func waitInFlight(t *testing.T, p *corev1.Pod, n int) {
	t.Helper()
	want := fmt.Sprintf("podgate_requests_in_flight %d", n)
	client := &http.Client{Timeout: runWait, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(runWait)
	for {
		resp, err := client.Get(fmt.Sprintf("http://%s:9091/metrics", p.Status.PodIP))
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), want) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gate never had %d request(s) in flight", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

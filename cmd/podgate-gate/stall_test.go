package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/podgate/podgate/gate/contract"
)

// gateStall is how long TestTheGateBinaryStoppedUnderLoadLosesNoRequest
// keeps the gate stopped: 50 s, under the gate's minute for reading a
// request's headers (ReadHeaderTimeout, as queue-proxy's). A connection
// accepted just before a longer stall has that minute behind it when the
// gate resumes, so the gate closes it with the request it could not read
// in time: that limit working, not a request lost to the stall.
const gateStall = 50 * time.Second

// TestTheGateBinaryStoppedUnderLoadLosesNoRequest: the podgate-gate
// binary, watching its serving container's liveness (a TCP probe every
// second, failure threshold 1), stopped with SIGSTOP for 50 s under load
// from 4 clients. Its stall costs the container nothing (the kubelet
// probes the container directly; the gate's copy only decides readiness),
// and the gate's own: on SIGCONT a new request is answered within a
// second, every request that arrived meanwhile is answered (their time
// limit, 300 s, outlasts the stall), and the gate's view of the container
// is ready at once — its watched probe passed again.
func TestTheGateBinaryStoppedUnderLoadLosesNoRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("stops the gate for 50 s")
	}
	t.Parallel()
	bin := gateBinary(t)
	port, _ := serveApp(t, 0)
	watched := fmt.Sprintf(`{%q:{"liveness":{"tcpSocket":{"port":%d,"host":"127.0.0.1"},"periodSeconds":1,"failureThreshold":1}}}`, "user-container", port)
	g := startPodGate(t, bin, "127.0.0.1", port, contract.EnvWatchedProbes+"="+watched)
	g.waitReady(t)

	var ok, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	c := &http.Client{Timeout: gateStall + 30*time.Second}
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Get(g.url + "/")
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					time.Sleep(10 * time.Millisecond)
					continue
				}
				ok.Add(1)
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
		c.CloseIdleConnections()
	}()
	g.waitFor(t, "the load is served", func() bool { return ok.Load() >= 20 })

	pid := g.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	continued := false
	defer func() {
		if !continued {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	time.Sleep(time.Until(stopped.Add(gateStall))) // the stall is the experiment
	servedBefore := ok.Load()
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	continued = true
	resumed := time.Now()
	quick := &http.Client{Timeout: time.Second}
	resp, err := quick.Get(g.url + "/")
	if err != nil {
		t.Fatalf("the first request after SIGCONT: %v, want an answer within 1 s", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the first request after SIGCONT: status %d", resp.StatusCode)
	}
	t.Logf("answered %s after SIGCONT", time.Since(resumed))
	g.waitFor(t, "the requests held during the stall are answered", func() bool { return ok.Load() >= servedBefore+4 })
	if n := failed.Load(); n > 0 {
		t.Errorf("%d requests failed (first: %v), want none", n, firstErr.Load())
	}
	if v := call(t, client(""), http.MethodGet, g.adminURL("/readyz?verbose"), nil); !strings.Contains(v, "[+]user-container ok") ||
		!strings.Contains(v, "liveness watched: tcpSocket, every 1s") {
		t.Errorf("/readyz?verbose after the stall: %q, want the container ready with its watched liveness", v)
	}
}

package main

import (
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/podgate/podgate/test/queueenv"
	"github.com/podgate/podgate/test/syncbuf"
)

// queueGate is the real gate binary started as Knative's queue sidecar:
// the environment Knative v0.50.0 writes (package queueenv) with every
// port free, so tests run side by side and next to `podgate run`.
type queueGate struct {
	rev            queueenv.Revision // as started: identity and ports filled in
	url            string            // http://podIP:servingPort
	tlsAddr        string            // podIP:tlsPort
	adminPort      int
	metricsURL     string // the gate's own metrics (PODGATE_METRICS_PORT)
	statsURL       string // the autoscaler's scrape (PODGATE_AUTOSCALER_PORT)
	stdout, stderr syncbuf.Buffer
	exited         chan struct{} // closed when the process ended
	exitErr        error         // Wait's error, once exited
	cmd            *exec.Cmd
}

// startQueueGate starts bin with rev's environment plus extra variables
// (later ones win). What rev leaves empty is a revision "hello-00001" in
// namespace default with its pod on 127.0.0.1. It does not wait for the
// gate: see waitReady. When the test ends the gate gets SIGTERM and must
// exit cleanly within 30 s.
func startQueueGate(t *testing.T, bin string, rev queueenv.Revision, extra ...string) *queueGate {
	t.Helper()
	if rev.Namespace == "" {
		rev.Namespace, rev.Service, rev.Configuration, rev.Revision = "default", "hello", "hello", "hello-00001"
	}
	if rev.Pod == "" {
		rev.Pod = rev.Revision + "-deployment-7d9c-x2x4q"
	}
	if rev.PodIP == "" {
		rev.PodIP = "127.0.0.1"
	}
	if rev.HostIP == "" {
		rev.HostIP = "127.0.0.1"
	}
	if rev.ServingPort == 0 {
		rev.ServingPort = freePortOn(t, rev.PodIP)
	}
	if rev.TLSPort == 0 {
		rev.TLSPort = freePortOn(t, rev.PodIP)
	}
	at := func(port int) string { return "http://" + hostPort(rev.PodIP, port) }
	g := &queueGate{
		rev: rev, url: at(rev.ServingPort), tlsAddr: hostPort(rev.PodIP, rev.TLSPort),
		adminPort: freePortOn(t, rev.PodIP), exited: make(chan struct{}),
	}
	// A loopback pod IP is where the gate listens on every port.
	metrics, stats := freePortOn(t, rev.PodIP), freePortOn(t, rev.PodIP)
	g.metricsURL, g.statsURL = at(metrics)+"/metrics", at(stats)+"/metrics"
	g.cmd = exec.Command(bin)
	g.cmd.Env = append(rev.Env(),
		"PODGATE_ADMIN_PORT="+strconv.Itoa(g.adminPort),
		"PODGATE_METRICS_PORT="+strconv.Itoa(metrics),
		"PODGATE_AUTOSCALER_PORT="+strconv.Itoa(stats),
		"PODGATE_DRAIN_QUIET_PERIOD=0s")
	g.cmd.Env = append(g.cmd.Env, extra...)
	g.cmd.Stdout, g.cmd.Stderr = &g.stdout, &g.stderr
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		g.exitErr = g.cmd.Wait()
		close(g.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-g.exited:
			return // the test ended it, or saw it end
		default:
		}
		_ = g.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-g.exited:
			if g.exitErr != nil {
				t.Errorf("the gate exited with %v after SIGTERM\n%s", g.exitErr, g.stderr.String())
			}
		case <-time.After(30 * time.Second):
			_ = g.cmd.Process.Kill()
			<-g.exited
			t.Errorf("the gate did not exit within 30 s of SIGTERM\n%s", g.stderr.String())
		}
		if t.Failed() {
			t.Logf("gate stderr:\n%s", g.stderr.String())
		}
	})
	return g
}

func hostPort(ip string, port int) string { return fmt.Sprintf("%s:%d", ip, port) }

// poll calls cond until it holds, failing the test after 30 s or when
// the gate exits first.
func (g *queueGate) poll(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, last := cond()
		if ok {
			return
		}
		select {
		case <-g.exited:
			t.Fatalf("the gate exited (%v) while waiting until %s (last: %s)\n%s", g.exitErr, what, last, g.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s (last: %s)\n%s", what, last, g.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitReady waits until the gate answers the kubelet's readiness check
// of the queue container with 200.
func (g *queueGate) waitReady(t *testing.T) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	g.poll(t, "the gate is ready", func() (bool, string) {
		code, err := healthCheck(client, g.url+"/")
		return code == http.StatusOK, fmt.Sprintf("%d %v", code, err)
	})
}

// waitFor polls cond until it holds, at most 30 s.
func (g *queueGate) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	g.poll(t, what, func() (bool, string) { return cond(), "" })
}

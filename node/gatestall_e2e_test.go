package node

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/admission/inject"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/node/events"
)

// gateStall is how long TestAStalledGateRestartsNoContainer keeps the gate
// stopped: 50 s, eight times what killed the app when its liveness probe
// went through the gate. It stays under the gate's minute for reading a
// request's headers (ReadHeaderTimeout, as queue-proxy's): a connection
// accepted just before a longer stall has that minute behind it when the
// gate resumes, so the gate closes it with the request it could not read
// in time (the client sees a reset), which is that limit working, not a
// request lost to the stall.
const gateStall = 50 * time.Second

// TestAStalledGateRestartsNoContainer: the real gate (the podgate binary's
// `gate`, injected as `podgate run` injects it) stopped with SIGSTOP for
// 50 s under load, in a pod whose containers have liveness probes of
// failureThreshold 1 every second (after 5 s: the apps' start). The node probes the containers
// directly, so no container is restarted, the gate included (it has no
// liveness probe); the gate's own readiness probe fails, so the pod leaves
// the endpoints while it cannot pass traffic; on SIGCONT a new request is
// answered within a second, and every request held meanwhile (its time
// limit is the default 300 s) is answered, none lost.
func TestAStalledGateRestartsNoContainer(t *testing.T) {
	if testing.Short() {
		t.Skip("stops the gate for 50 s")
	}
	t.Parallel()
	h := newGateHarness(t)
	h.startInjected(podYAML("stall", `  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    ports: [{containerPort: 8080}]
    livenessProbe: {httpGet: {path: /livez, port: 8080}, initialDelaySeconds: 5, periodSeconds: 1, failureThreshold: 1}
    readinessProbe: {httpGet: {path: /readyz, port: 8080}, periodSeconds: 1}
  - name: side
    image: ghcr.io/podgate/testapp
    args: ["--port", "8081"]
    livenessProbe: {tcpSocket: {port: 8081}, initialDelaySeconds: 5, periodSeconds: 1, failureThreshold: 1}
    readinessProbe: {httpGet: {path: /readyz, port: 8081}, periodSeconds: 1}
`), inject.Options{})
	p := h.waitPod("stall", "ready", podReady)
	if lp := p.Spec.Containers[0].LivenessProbe; lp.HTTPGet == nil || lp.HTTPGet.Port.IntValue() != 8080 {
		t.Fatalf("the app's liveness probe is %+v, want its own, on the app", lp)
	}
	pid, err := strconv.Atoi(procStatus(t, podgateBinary(t), contract.EnvServingPod+"=stall")["pid"])
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://%s:%d/", p.Status.PodIP, contract.GatePort)

	// Load: 4 clients in a loop through the gate, each request allowed
	// longer than the stall (its time limit in the gate is 300 s).
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: gateStall + 30*time.Second}
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
				resp, err := client.Get(url)
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
		client.CloseIdleConnections()
	}()
	h.waitFor("the load is served", func() bool { return ok.Load() >= 20 })

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
	// The gate's readiness probe (/readyz/gate) times out: the pod leaves
	// the endpoints while the gate cannot pass traffic.
	h.waitPod("stall", "not ready while the gate is stopped", func(p *corev1.Pod) bool { return !podReady(p) })
	time.Sleep(time.Until(stopped.Add(gateStall))) // the stall is the experiment
	servedBefore := ok.Load()
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	continued = true
	resumed := time.Now()
	quick := &http.Client{Timeout: time.Second}
	resp, err := quick.Get(url)
	if err != nil {
		t.Fatalf("the first request after SIGCONT: %v, want an answer within 1 s", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the first request after SIGCONT: status %d", resp.StatusCode)
	}
	t.Logf("answered %s after SIGCONT; %d requests served before the stall's end", time.Since(resumed), servedBefore)
	h.waitFor("the requests held during the stall are answered", func() bool { return ok.Load() >= servedBefore+4 })
	h.waitPod("stall", "ready again", podReady)

	if n := failed.Load(); n > 0 {
		t.Errorf("%d requests failed (first: %v), want none: held requests wait out the stall", n, firstErr.Load())
	}
	now := h.current("stall")
	for _, name := range []string{"app", "side", contract.GateContainerName} {
		if n := restarts(now, name); n != 0 {
			t.Errorf("container %s restarted %d time(s) while the gate was stopped, want none", name, n)
		}
	}
	for _, e := range h.events("stall", events.ReasonUnhealthy) {
		if strings.HasPrefix(e.Message, "Liveness") {
			t.Errorf("a liveness probe failed: %s: %s", e.InvolvedObject.FieldPath, e.Message)
		}
	}
	for _, e := range h.events("stall", events.ReasonKilling) {
		t.Errorf("a container was killed: %s: %s", e.InvolvedObject.FieldPath, e.Message)
	}
}

// waitFor polls cond until it holds, failing the test after waitLimit.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: not within %s", what, waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

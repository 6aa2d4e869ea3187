package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/admission/inject"
	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/local/apiserver"
	"github.com/podgate/podgate/node/events"
	"github.com/podgate/podgate/node/images"
)

// The gate in the node agent: pods injected as `podgate run` injects them,
// the real podgate binary as the gate (and as its startup check), and the
// control API the gates read their pod from.

var (
	podgateOnce sync.Once
	podgatePath string
	podgateErr  error
)

// podgateBinary builds the real podgate binary once per test run.
func podgateBinary(t testing.TB) string {
	t.Helper()
	podgateOnce.Do(func() {
		dir, err := os.MkdirTemp("", "podgate-runtime-test-")
		if err != nil {
			podgateErr = err
			return
		}
		podgatePath = filepath.Join(dir, "podgate")
		out, err := exec.Command("go", "build", "-o", podgatePath, "github.com/podgate/podgate/cmd/podgate").CombinedOutput()
		if err != nil {
			podgateErr = fmt.Errorf("go build podgate: %w\n%s", err, out)
		}
	})
	if podgateErr != nil {
		t.Fatal(podgateErr)
	}
	return podgatePath
}

// gateHarness is a harness whose pods get the gate, with the control API
// the gates watch their pod through.
type gateHarness struct {
	*harness
	api string // host:port of the control API
}

func newGateHarness(t *testing.T) *gateHarness {
	t.Helper()
	bin := podgateBinary(t)
	im, err := images.Default()
	if err != nil {
		t.Fatal(err)
	}
	im.Self = bin
	im.Set(contract.DefaultImage, bin)
	// The API must outlive the agent's shutdown (cleanups run last
	// first): the gates learn of their pod's deletion through it.
	var stopAPI func()
	t.Cleanup(func() {
		if stopAPI != nil {
			stopAPI()
		}
	})
	h := newHarness(t, func(o *Options) { o.Images = im })
	ln, err := apiserver.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- apiserver.NewServer(apiserver.Config{Store: h.store, Pods: h.pods, Logs: h.agent}).Serve(ctx, ln)
	}()
	stopAPI = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("control API: %v", err)
		}
	}
	return &gateHarness{harness: h, api: ln.Addr().String()}
}

// startInjected starts the manifest's workloads with the gate injected as
// `podgate run` injects it.
func (g *gateHarness) startInjected(manifest string, opts inject.Options) {
	g.t.Helper()
	opts.Local, opts.APIAddr = true, g.api
	var ws []*workload.Workload
	for _, w := range load(g.t, manifest) {
		iw, err := inject.Gate(w, opts)
		if err != nil {
			g.t.Fatal(err)
		}
		ws = append(ws, iw)
	}
	g.startWorkloads(ws)
}

// outputLine is the index of the first output line of pod/container
// containing substr, or -1.
func (h *harness) outputLine(pod, container, substr string) int {
	for i, line := range strings.Split(h.out.String(), "\n") {
		if strings.HasPrefix(line, pod+"/"+container+" | ") && strings.Contains(line, substr) {
			return i
		}
	}
	return -1
}

// loggedAt is the time= stamp the process wrote on output line i. Each
// process stamps its own lines (slog, milliseconds, one clock); the line
// order of the merged output is only the order two pipes were relayed in,
// which a loaded machine may swap.
func (h *harness) loggedAt(i int) time.Time {
	h.t.Helper()
	line := strings.Split(h.out.String(), "\n")[i]
	_, rest, ok := strings.Cut(line, "time=")
	stamp, _, _ := strings.Cut(rest, " ")
	at, err := time.Parse(time.RFC3339Nano, stamp)
	if !ok || err != nil {
		h.t.Fatalf("output line %q has no time= stamp: %v", line, err)
	}
	return at
}

func (h *harness) waitOutputLine(pod, container, substr string) int {
	h.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		if i := h.outputLine(pod, container, substr); i >= 0 {
			return i
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s/%s printed no line containing %q within %s", pod, container, substr, waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestGateStartsBeforeTheAppAndNoProbeFailsAgainstIt: the gate is a
// native sidecar; the app's containers start only once its startup check
// passed (no version of the pod shows one created before), no probe
// fails against the gate, and the gate's own startup check records no
// failure either.
func TestGateStartsBeforeTheAppAndNoProbeFailsAgainstIt(t *testing.T) {
	t.Parallel()
	h := newGateHarness(t)
	writes := h.record()
	h.startInjected(podYAML("web", `  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    ports: [{containerPort: 8080}]
    startupProbe: {tcpSocket: {port: 8080}, periodSeconds: 1, failureThreshold: 60}
    livenessProbe: {httpGet: {path: /livez, port: 8080}, periodSeconds: 1}
    readinessProbe: {httpGet: {path: /readyz, port: 8080}, periodSeconds: 1}
  - name: side
    image: ghcr.io/podgate/testapp
    args: ["--port", "8081"]
    livenessProbe: {tcpSocket: {port: 8081}, initialDelaySeconds: 1, periodSeconds: 1}
`), inject.Options{})
	p := h.waitPod("web", "ready", podReady)
	if cs := containerStatus(p, contract.GateContainerName); cs.Started == nil || !*cs.Started || !cs.Ready {
		t.Errorf("gate status %+v, want started and ready", cs)
	}
	// Liveness probes reached the app (the node's and the gate's copy).
	h.waitOutputCount("web", "Liveness probe called", 2)

	writes.mu.Lock()
	pods := append([]*corev1.Pod(nil), writes.pods...)
	writes.mu.Unlock()
	sawAppStart := false
	for _, v := range pods {
		if v == nil || v.Name != "web" {
			continue
		}
		gate := containerStatus(v, contract.GateContainerName)
		for _, cs := range v.Status.ContainerStatuses {
			if cs.State.Waiting != nil && cs.State.Waiting.Reason == "PodInitializing" {
				continue
			}
			sawAppStart = true
			if gate.Started == nil || !*gate.Started {
				t.Errorf("pod version %s: container %s is %s while the gate has not started (%+v)",
					v.ResourceVersion, cs.Name, stateString(cs.State), gate.State)
			}
		}
	}
	if !sawAppStart {
		t.Error("no pod version showed the app started")
	}
	for _, e := range h.events("web", events.ReasonUnhealthy) {
		switch {
		case strings.Contains(e.Message, ":8022"):
			t.Errorf("a probe failed against the gate: %s: %s", e.InvolvedObject.FieldPath, e.Message)
		case strings.HasPrefix(e.Message, "Liveness"):
			t.Errorf("liveness failed: %s: %s", e.InvolvedObject.FieldPath, e.Message)
		case e.InvolvedObject.FieldPath == "spec.initContainers{podgate}" && strings.HasPrefix(e.Message, "Startup"):
			t.Errorf("the gate's startup check failed: %s", e.Message)
		}
	}
}

// routedVsDirect: containers whose probes warn or fail in each way the
// kubelet tells apart. NAME is replaced.
const routedVsDirect = `apiVersion: v1
kind: Pod
metadata: {name: NAME}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: ghcr.io/podgate/testapp
    ports: [{containerPort: 8080}]
    startupProbe:
      httpGet: {path: "/redirect?loc=http://192.0.2.1/elsewhere", port: 8080}
      periodSeconds: 1
      failureThreshold: 1000
    livenessProbe:
      httpGet: {path: "/redirect?loc=http://192.0.2.1/elsewhere&code=301", port: 8080}
      periodSeconds: 1
      failureThreshold: 1000
  - name: unready
    image: ghcr.io/podgate/testapp
    args: ["--port", "8081", "--ready-after", "1h"]
    livenessProbe: {httpGet: {path: /readyz, port: 8081}, initialDelaySeconds: 1, periodSeconds: 1, failureThreshold: 1000}
  - name: sick
    image: ghcr.io/podgate/testapp
    args: ["--port", "8082", "--fail-live-after", "1ms"]
    livenessProbe: {httpGet: {path: /healthz, port: 8082}, initialDelaySeconds: 1, periodSeconds: 1, failureThreshold: 1000}
  - name: grpc
    image: ghcr.io/podgate/testapp
    args: ["--port", "8083", "--grpc-port", "9000", "--fail-live-after", "1ms"]
    livenessProbe: {grpc: {port: 9000, service: liveness}, initialDelaySeconds: 1, periodSeconds: 1, failureThreshold: 1000}
  - name: closed
    image: ghcr.io/podgate/testapp
    args: ["--port", "8084"]
    livenessProbe: {tcpSocket: {port: 8099}, periodSeconds: 1, failureThreshold: 1000}
`

// TestInjectedProbesRecordWhatDirectProbesRecord runs the same pod twice,
// once as written and once with the gate, whose containers keep their
// liveness and startup probes (the gate watches a copy of the liveness
// ones): the node agent records the same ProbeWarning and Unhealthy
// events, message for message (the pod IP aside), as without the gate.
func TestInjectedProbesRecordWhatDirectProbesRecord(t *testing.T) {
	t.Parallel()
	h := newGateHarness(t)
	h.forceShutdown() // the failing containers would take their grace period
	h.start(strings.ReplaceAll(routedVsDirect, "NAME", "direct"))
	h.startInjected(strings.ReplaceAll(routedVsDirect, "NAME", "routed"), inject.Options{})
	direct := h.waitPod("direct", "running", func(p *corev1.Pod) bool { return p.Status.PodIP != "" })
	routed := h.waitPod("routed", "running", func(p *corev1.Pod) bool { return p.Status.PodIP != "" })
	if p := h.current("routed"); p.Spec.Containers[0].LivenessProbe.HTTPGet.Path == "/probe/web/liveness" {
		t.Fatalf("the injected pod's liveness probe is %+v, routed through the gate", p.Spec.Containers[0].LivenessProbe)
	}

	redirectBody := "Probe terminated redirects, Response body: <a href=\"http://192.0.2.1/elsewhere\">"
	for _, want := range []struct {
		container, reason, message string
	}{
		{"web", events.ReasonProbeWarning, "Startup probe warning: " + redirectBody},
		{"web", events.ReasonProbeWarning, "Liveness probe warning: " + redirectBody},
		{"unready", events.ReasonUnhealthy, "Liveness probe failed: HTTP probe failed with statuscode: 503"},
		{"sick", events.ReasonUnhealthy, "Liveness probe failed: HTTP probe failed with statuscode: 500"},
		{"grpc", events.ReasonUnhealthy, `Liveness probe failed: service unhealthy (responded with "NOT_SERVING")`},
		{"closed", events.ReasonUnhealthy, "Liveness probe failed: dial tcp POD:8099: connect: connection refused"},
	} {
		for _, p := range []*corev1.Pod{direct, routed} {
			msg := strings.ReplaceAll(want.message, "POD", p.Status.PodIP)
			e := h.waitEvent(p.Name, want.reason, msg)
			if e.InvolvedObject.FieldPath != "spec.containers{"+want.container+"}" {
				t.Errorf("%s: %q recorded on %s, want container %s", p.Name, msg, e.InvolvedObject.FieldPath, want.container)
			}
		}
	}
	// Whatever else was recorded, the routed pod recorded nothing the
	// direct one did not: each message (with its pod IP abstracted) is one
	// of the direct pod's, and none names the gate.
	normalize := func(p *corev1.Pod, e corev1.Event) string {
		return e.Reason + " " + e.InvolvedObject.FieldPath + " " + strings.ReplaceAll(e.Message, p.Status.PodIP, "POD")
	}
	seen := map[string]bool{}
	for _, e := range h.events("direct", "") {
		seen[normalize(direct, e)] = true
	}
	for _, e := range h.events("routed", "") {
		if e.Reason != events.ReasonUnhealthy && e.Reason != events.ReasonProbeWarning {
			continue
		}
		if strings.Contains(e.InvolvedObject.FieldPath, contract.GateContainerName) {
			continue // the gate's own readiness: not one of the app's probes
		}
		if n := normalize(routed, e); !seen[n] && !strings.Contains(n, "connection refused") {
			// A refused connection depends on when each app listened.
			t.Errorf("routed pod recorded %q, which probing directly did not", n)
		}
		if strings.Contains(e.Message, ":8022") || strings.Contains(e.Message, "/probe/") {
			t.Errorf("routed pod recorded the gate's address instead of the original: %s", e.Message)
		}
	}
}

// TestPlainPodReadyWithoutItsPortKnativeServiceNot: injecting the gate
// does not change what Ready means. A Pod whose serving container has only
// an exec readiness probe and does not listen on its declared port is
// Ready, as on Kubernetes; the same container in a Knative Service is not
// until its port accepts connections, as with Knative.
func TestPlainPodReadyWithoutItsPortKnativeServiceNot(t *testing.T) {
	t.Parallel()
	h := newGateHarness(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	flag := filepath.Join(t.TempDir(), "listen")
	// Sleeps until the flag file exists, then becomes the test app on
	// $PORT (8080): its port refuses connections until then.
	waitThenServe := fmt.Sprintf(`["/bin/sh", "-c", "while [ ! -e %s ]; do sleep 0.05; done; exec %s testapp"]`, flag, exe)
	h.startInjected(podYAML("plain", fmt.Sprintf(`  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: busybox
    command: %s
    ports: [{containerPort: 8080}]
    readinessProbe: {exec: {command: ["true"]}, periodSeconds: 1}
`, waitThenServe))+`---
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: ksvc}
spec:
  template:
    spec:
      timeoutSeconds: 2
      containers:
      - image: busybox
        command: `+waitThenServe+`
        ports: [{containerPort: 8080}]
        readinessProbe: {exec: {command: ["true"]}, periodSeconds: 1}
`, inject.Options{})

	plain := h.waitPod("plain", "ready without listening on 8080", podReady)
	if _, err := os.Stat(flag); err == nil {
		t.Fatal("the flag exists already")
	}
	verbose := h.gateReadyz(plain)
	if !strings.Contains(verbose, "[+]app ok") {
		t.Errorf("the plain pod's gate:\n%s\nwant app ok", verbose)
	}

	ksvc := h.waitPodMatching("ksvc-", "running", func(p *corev1.Pod) bool {
		return containerStatus(p, "user-container").State.Running != nil
	})
	// Evidence, not a sleep: the gate has checked the port and found it
	// closed, and the pod is not ready.
	deadline := time.Now().Add(waitLimit)
	for !strings.Contains(verbose, "[-]user-container failed: readiness probe") {
		if time.Now().After(deadline) {
			t.Fatalf("the Knative pod's gate never reported the closed port:\n%s", verbose)
		}
		time.Sleep(50 * time.Millisecond)
		verbose = h.gateReadyz(ksvc)
	}
	if p := h.current(ksvc.Name); podReady(p) {
		t.Fatalf("the Knative Service's pod is ready while its port refuses connections:\n%s", verbose)
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.waitPod(ksvc.Name, "ready once its port listens", podReady)
}

// gateReadyz is the pod's gate's /readyz?verbose.
func (h *harness) gateReadyz(p *corev1.Pod) string {
	h.t.Helper()
	_, body, err := get(fmt.Sprintf("http://%s:%d/readyz?verbose", p.Status.PodIP, contract.GateAdminPort))
	if err != nil {
		return err.Error()
	}
	return body
}

// TestDrainHoldsWithTheGateAsNativeSidecar: deleting the pod, the gate
// learns of it from the node agent (the deletionTimestamp), long before
// its own SIGTERM, which as a native sidecar comes last; the app's preStop
// waits in the drain, a request straight to the pod IP during the drain is
// served and restarts the quiet period, and the app's SIGTERM comes only
// after the gate logged the drain's end.
func TestDrainHoldsWithTheGateAsNativeSidecar(t *testing.T) {
	t.Parallel()
	h := newGateHarness(t)
	// Grace 6 s: a quiet period of 3 s.
	h.startInjected(podYAML("drain", `  terminationGracePeriodSeconds: 6
  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    ports: [{containerPort: 8080}]
`), inject.Options{})
	p := h.waitPod("drain", "ready", podReady)
	gateUnready := func() int32 {
		return h.eventCount("drain", events.ReasonUnhealthy, "Readiness probe failed") // only the gate has a readiness probe
	}
	unreadyBefore, logBefore := gateUnready(), len(h.logs.String())
	if err := h.pods.DeletePod(context.Background(), "default", "drain", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitOutputLine("drain", contract.GateContainerName, `why="the pod is being deleted (status source)"`)
	h.waitOutputLine("drain", contract.GateContainerName, "preStop hook waiting for the drain")
	// A request straight to the pod during the drain is served.
	// The gate's quiet period starts no earlier than the request did
	// (taking the time after the answer would race the gate by the
	// answer's way back).
	lastRequest := time.Now()
	code, body, err := get(fmt.Sprintf("http://%s:%d/", p.Status.PodIP, contract.GatePort))
	if err != nil || code != 200 || !strings.Contains(body, "drain") {
		t.Fatalf("request during the drain: %d %q %v; want 200 from the app", code, body, err)
	}
	drained := h.loggedAt(h.waitOutputLine("drain", contract.GateContainerName, "drained: no request for the quiet period"))
	term := h.loggedAt(h.waitOutputLine("drain", "app", "termination requested"))
	sigterm := time.Now()
	if term.Before(drained) {
		t.Errorf("the app's SIGTERM (logged at %s) came before the gate's drain (%s)", term.Format(time.StampMilli), drained.Format(time.StampMilli))
	}
	if quiet := 3 * time.Second; sigterm.Sub(lastRequest) < quiet {
		t.Errorf("the app got SIGTERM %s after the last request, within the %s quiet period", sigterm.Sub(lastRequest), quiet)
	}
	if h.outputLine("drain", contract.GateContainerName, "preStop hook released") >= 0 {
		t.Error("the app's preStop was released as for a restart: the gate did not know of the deletion")
	}
	// The drain failed the gate's readiness every second; the node agent
	// counted each failure and logged at most one.
	if n := gateUnready() - unreadyBefore; n < 2 {
		t.Errorf("%d readiness failures counted during a drain of 3 s or more, want at least 2", n)
	}
	if n := strings.Count(h.logs.String()[logBefore:], "Readiness probe failed"); n > 1 {
		t.Errorf("%d readiness failures logged while the pod drained, want at most 1", n)
	}
	h.waitGone("drain")
	// The gate stopped last: its Killing event is the last one.
	kills := h.events("drain", events.ReasonKilling)
	if len(kills) != 2 || kills[1].InvolvedObject.FieldPath != "spec.initContainers{podgate}" {
		var order []string
		for _, k := range kills {
			order = append(order, k.InvolvedObject.FieldPath)
		}
		t.Errorf("stop order %v, want the app, then the gate", order)
	}
}

// TestLivenessKillIsARestartNotADrain: with the deletion known from the
// status source, a preStop hook without it is a container restart (a
// liveness kill): released after a second, no drain.
func TestLivenessKillIsARestartNotADrain(t *testing.T) {
	t.Parallel()
	h := newGateHarness(t)
	h.startInjected(podYAML("restart", `  terminationGracePeriodSeconds: 6
  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    ports: [{containerPort: 8080}]
    livenessProbe: {httpGet: {path: /livez, port: 8080}, initialDelaySeconds: 1, periodSeconds: 1, failureThreshold: 1}
`), inject.Options{})
	p := h.waitPod("restart", "ready", podReady)
	// Without a readiness probe the pod is Ready as its containers start,
	// before the app listens: try until the app answers.
	toggle := fmt.Sprintf("http://%s:8080/toggleLive?set=false", p.Status.PodIP)
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(20 * time.Millisecond) {
		code, _, err := get(toggle)
		if err == nil && code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("toggle liveness: %d %v", code, err)
		}
	}
	h.restarted("restart", "app", 1)
	h.waitOutputLine("restart", contract.GateContainerName, "preStop hook released: no SIGTERM, so a container restarts")
	if i := h.outputLine("restart", contract.GateContainerName, "terminating: failing health checks"); i >= 0 {
		t.Errorf("the gate drained for a container restart (output line %d)", i)
	}
	h.waitPod("restart", "ready again", podReady)
}

package node

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podgate/podgate/admission/inject"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/record"
	"github.com/podgate/podgate/record/kubewatch"
	"github.com/podgate/podgate/record/timeline"
)

// TestARecordingBlamesTheFailingSidecarNotTheGate: an injected pod whose
// sidecar's HTTP readiness probe fails. The probe stays on the sidecar, so
// the node marks the sidecar unready with its own Unhealthy event, the
// gate (whose kubelet probe answers for the gate alone) stays ready, and
// the gate's condition names the sidecar: a recording of the control API
// (as `podgate record` makes one, probe facts from the events) and its
// timeline show the sidecar not ready and the gate ready.
func TestARecordingBlamesTheFailingSidecarNotTheGate(t *testing.T) {
	t.Parallel()
	h := newGateHarness(t)
	client, err := kubernetes.NewForConfig(&rest.Config{Host: "http://" + h.api})
	if err != nil {
		t.Fatal(err)
	}
	log := record.NewLog(100000)
	started := time.Now()
	w, err := kubewatch.Start(t.Context(), kubewatch.Config{Client: client, Sink: log, ProbesFromEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = w.Stop(context.Background())
		}
	}()
	h.startInjected(podYAML("blame", `  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    ports: [{containerPort: 8080}]
    readinessProbe: {httpGet: {path: /readyz, port: 8080}, periodSeconds: 1}
  - name: side
    image: ghcr.io/podgate/testapp
    args: ["--port", "8081", "--ready-after", "1h"]
    readinessProbe: {httpGet: {path: /readyz, port: 8081}, periodSeconds: 1}
`), inject.Options{})
	h.waitEvent("blame", "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503")
	p := h.waitPod("blame", "the gate ready, the sidecar not", func(p *corev1.Pod) bool {
		// The gate's condition follows the containers' statuses by a
		// write: wait for the one that names only the sidecar, not for
		// the first False (at the start it names the app too).
		return containerStatus(p, contract.GateContainerName).Ready && containerStatus(p, "app").Ready &&
			!containerStatus(p, "side").Ready && conditionStatus(p, contract.ContainersReadyCondition) == "False" &&
			!strings.Contains(conditionMessage(p, contract.ContainersReadyCondition), "app (")
	})
	if podReady(p) {
		t.Error("the pod is Ready while its sidecar is not")
	}
	for _, c := range p.Status.Conditions {
		if string(c.Type) == contract.ContainersReadyCondition && !strings.Contains(c.Message, "side (readiness probe failed: HTTP probe failed with statuscode: 503)") {
			t.Errorf("the gate's condition says %q, want it to name the sidecar and its probe's message", c.Message)
		}
	}
	// From here on (the start's failures, before the apps listened and the
	// gate heard from its status source, are over) only the sidecar fails.
	settled := time.Now()
	sideFailures := func() int {
		facts, _, _ := log.Since(0)
		n := 0
		for _, f := range facts {
			if f.Kind == record.KindProbe && f.Pod == "blame" && f.Container == "side" && f.Probe.Result == "failure" && f.Time.After(settled) {
				n++
			}
		}
		return n
	}
	h.waitFor("the recording saw the sidecar fail twice more", func() bool { return sideFailures() >= 2 })
	h.waitFor("the recording saw the gate ready", func() bool {
		facts, _, _ := log.Since(0)
		for _, f := range facts {
			if f.Kind == record.KindContainer && f.Pod == "blame" && f.Container == contract.GateContainerName && f.State.Ready {
				return true
			}
		}
		return false
	})
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stopped = true
	if err := w.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	facts, _, _ := log.Since(0)
	for _, f := range facts {
		if f.Kind == record.KindProbe && f.Pod == "blame" && f.Probe.Result == "failure" && f.Container != "side" && f.Time.After(settled) {
			t.Errorf("a probe failure blamed on %q: %+v", f.Container, f.Probe)
		}
	}
	m, err := timeline.Build(record.Header{Format: "podgate-recording", Version: 1, Source: "podgate run", Started: started}, facts, timeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var pod *timeline.Pod
	for _, tp := range m.Pods {
		if tp.Name == "blame" || strings.HasSuffix(tp.Key, "/blame") {
			pod = tp
		}
	}
	if pod == nil {
		t.Fatal("no pod blame in the timeline")
	}
	last := map[string]string{}
	failedProbes := map[string]int{}
	for _, c := range pod.Containers {
		if n := len(c.Spans); n > 0 {
			last[c.Name] = c.Spans[n-1].State
		}
		for _, tick := range c.Probes {
			if tick.Probe == "readiness" && tick.Result == "failure" && tick.At.After(settled) {
				failedProbes[c.Name]++
			}
		}
	}
	if last["side"] != "running" || last[contract.GateContainerName] != "ready" || last["app"] != "ready" {
		t.Errorf("timeline's last states %v, want side running (not ready), the gate and app ready", last)
	}
	if failedProbes["side"] == 0 || len(failedProbes) != 1 {
		t.Errorf("timeline's failed readiness probes per container %v, want the sidecar's only once the pod settled", failedProbes)
	}
}

// conditionMessage is the message of p's condition of type t, "" without one.
func conditionMessage(p *corev1.Pod, t string) string {
	for _, c := range p.Status.Conditions {
		if string(c.Type) == t {
			return c.Message
		}
	}
	return ""
}

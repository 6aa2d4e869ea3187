package node

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/podgate/podgate/admission/inject"
	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/node/podstatus"
)

// The gate's condition (contract.ContainersReadyCondition) under the node
// agent: pods injected as `podgate run` injects them, the real podgate
// binary as the gate, writing its condition through the real control API,
// and the agent computing Ready from it as the kubelet does.

// withSidecar is a Deployment or a Knative Service whose sidecar's
// readiness the gate probes; the test flips it through the sidecar's port.
func withSidecar(kind string) string {
	containers := `      terminationGracePeriodSeconds: 2
      containers:
      - name: app
        image: ghcr.io/podgate/testapp
        ports: [{containerPort: 8080}]
        readinessProbe: {httpGet: {path: /readyz, port: 8080}, periodSeconds: 1}
      - name: side
        image: ghcr.io/podgate/testapp
        args: ["--port", "8081"]
        readinessProbe: {httpGet: {path: /readyz, port: 8081}, periodSeconds: 1, failureThreshold: 1}
`
	if kind == "Service" {
		return `apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: web}
spec:
  template:
    spec:
      timeoutSeconds: 2
` + strings.Replace(containers, "      terminationGracePeriodSeconds: 2\n", "", 1)
	}
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
` + containers
}

// withoutGateProbe drops the gate's kubelet readiness probe: the node
// agent then probes no container's readiness, and Ready follows the
// readiness gates alone.
func withoutGateProbe(w *workload.Workload) {
	w.Container(contract.GateContainerName).ReadinessProbe = nil
}

// startInjectedWith is startInjected with a change to each injected
// workload before it starts.
func (g *gateHarness) startInjectedWith(manifest string, change func(*workload.Workload)) {
	g.t.Helper()
	opts := inject.Options{Local: true, APIAddr: g.api}
	var ws []*workload.Workload
	for _, w := range load(g.t, manifest) {
		iw, err := inject.Gate(w, opts)
		if err != nil {
			g.t.Fatal(err)
		}
		change(iw)
		ws = append(ws, iw)
	}
	g.startWorkloads(ws)
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func gateCondition(p *corev1.Pod) *corev1.PodCondition {
	return podCondition(p, contract.ContainersReadyCondition)
}

func gateConditionIs(status corev1.ConditionStatus) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		c := gateCondition(p)
		return c != nil && c.Status == status
	}
}

// containerLines counts the lines of pod/container's output containing
// substr.
func (h *harness) containerLines(pod, container, substr string) int {
	n := 0
	for _, line := range strings.Split(h.out.String(), "\n") {
		if strings.HasPrefix(line, pod+"/"+container+" | ") && strings.Contains(line, substr) {
			n++
		}
	}
	return n
}

// conditionWrites counts the gate's writes of its condition, by its log.
func (h *harness) conditionWrites(pod string) int {
	return h.outputCount(pod, "pod condition written")
}

// TestASidecarNotReadyIsNamedInThePodsCondition: in a Deployment and in a
// Knative Service, a sidecar whose readiness probe (run by the gate)
// fails turns the gate's condition False, naming the sidecar and its
// probe's message; the agent makes the pod not Ready at once, with the
// kubelet's ReadinessGatesNotReady (or, when its own probe of the sidecar
// saw it first, ContainersNotReady naming the sidecar); and all comes
// back once the sidecar is ready. The gate's own kubelet readiness probe
// is removed here. No version of the pod is Ready while the
// gate's condition is not True, and the gate writes nothing while nothing
// changes.
func TestASidecarNotReadyIsNamedInThePodsCondition(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"Deployment", "Service"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			h := newGateHarness(t)
			writes := h.record()
			h.startInjectedWith(withSidecar(kind), withoutGateProbe)
			prefix := "web-"
			p := h.waitPodMatching(prefix, "ready", func(p *corev1.Pod) bool { return podReady(p) && gateConditionIs(corev1.ConditionTrue)(p) })
			if gates := p.Spec.ReadinessGates; len(gates) != 1 || gates[0].ConditionType != contract.ContainersReadyCondition {
				t.Fatalf("readiness gates %+v, want the gate's", gates)
			}

			if code, _, err := get(fmt.Sprintf("http://%s:8081/toggleReady?set=false", p.Status.PodIP)); err != nil || code != 200 {
				t.Fatalf("toggle the sidecar: %d %v", code, err)
			}
			// The sidecar's readiness probe runs twice: on its container
			// (its own status, as the kubelet's) and in the gate. Whichever
			// sees the failure first takes Ready down; the gate's condition
			// names the sidecar with its probe's message once its own
			// probe has counted the failure.
			const named = "containers not ready: side (readiness probe failed: HTTP probe failed with statuscode: 503)"
			p = h.waitPod(p.Name, "not ready, the gate's condition naming the sidecar's probe", func(p *corev1.Pod) bool {
				r, c := podCondition(p, corev1.PodReady), gateCondition(p)
				return r != nil && r.Status == corev1.ConditionFalse && c != nil && c.Status == corev1.ConditionFalse && c.Message == named
			})
			if c := gateCondition(p); c.Reason != contract.ReasonContainersNotReady {
				t.Errorf("the gate's condition: reason %s, want %s", c.Reason, contract.ReasonContainersNotReady)
			}
			wantReady := map[string]string{
				podstatus.ReasonReadinessGatesNotReady: `the status of pod readiness gate "` + contract.ContainersReadyCondition + `" is not "True", but False`,
				"ContainersNotReady":                   "containers with unready status: [side]",
			}
			if r := podCondition(p, corev1.PodReady); wantReady[r.Reason] == "" || r.Message != wantReady[r.Reason] {
				t.Errorf("Ready: %s %q, want one of %q", r.Reason, r.Message, wantReady)
			}
			if kind == "Service" {
				h.waitService("web", "naming the sidecar", map[string]wantCond{
					"RoutesReady": {status: corev1.ConditionUnknown, reason: "NoHealthyBackends", message: "pod " + p.Name + ": " + named},
				})
			}

			// Nothing changes for three more probes of the sidecar: the
			// gate writes nothing.
			// The write is logged once its answer came, after the store
			// had it.
			h.waitOutputLine(p.Name, contract.GateContainerName, `status="False (`+contract.ReasonContainersNotReady+`: `+named+`)"`)
			const failed = "Readiness probe called, responding with: false"
			before, probes := h.conditionWrites(p.Name), h.containerLines(p.Name, "side", failed)
			h.waitPod(p.Name, "probed three more times", func(*corev1.Pod) bool { return h.containerLines(p.Name, "side", failed) >= probes+3 })
			if n := h.conditionWrites(p.Name) - before; n != 0 {
				t.Errorf("the gate wrote its condition %d time(s) while nothing changed:\n%s", n, h.out.String())
			}

			if code, _, err := get(fmt.Sprintf("http://%s:8081/toggleReady?set=true", p.Status.PodIP)); err != nil || code != 200 {
				t.Fatalf("toggle the sidecar: %d %v", code, err)
			}
			p = h.waitPod(p.Name, "ready again", func(p *corev1.Pod) bool { return podReady(p) && gateConditionIs(corev1.ConditionTrue)(p) })
			if c := gateCondition(p); c.Reason != "" || c.Message != "" {
				t.Errorf("True again with reason %q, message %q", c.Reason, c.Message)
			}

			// The gate's write of False lands before the agent's Ready
			// follows it, but Ready never turns True while the condition
			// is not True.
			writes.mu.Lock()
			defer writes.mu.Unlock()
			wasReady := false
			for _, v := range writes.pods {
				if v == nil || v.Name != p.Name {
					continue
				}
				if podReady(v) && !wasReady {
					if c := gateCondition(v); c == nil || c.Status != corev1.ConditionTrue {
						t.Errorf("pod version %s turned Ready while the gate's condition is %+v", v.ResourceVersion, c)
					}
				}
				wasReady = podReady(v)
			}
		})
	}
}

// TestTheGatesConditionSurvivesTheAgentsStatusWrites: the agent writes the
// whole pod status on every change (here a container that keeps exiting
// and restarting), yet once the gate wrote its condition, no stored
// version of the pod lacks it.
func TestTheGatesConditionSurvivesTheAgentsStatusWrites(t *testing.T) {
	t.Parallel()
	h := newGateHarness(t)
	h.forceShutdown()
	writes := h.record()
	h.startInjected(podYAML("flaky", `  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    ports: [{containerPort: 8080}]
  - name: crasher
    image: busybox
    command: ["/bin/sh", "-c", "sleep 0.3; exit 3"]
`), inject.Options{})
	h.waitPod("flaky", "with the gate's condition", func(p *corev1.Pod) bool { return gateCondition(p) != nil })
	h.restarted("flaky", "crasher", 2)

	writes.mu.Lock()
	defer writes.mu.Unlock()
	seen, after := false, 0
	for _, v := range writes.pods {
		if v == nil || v.Name != "flaky" {
			continue
		}
		if gateCondition(v) != nil {
			seen = true
		} else if seen {
			t.Errorf("pod version %s lost the gate's condition: %s", v.ResourceVersion, describeStatus(v))
		}
		if seen {
			after++
		}
	}
	if after < 3 {
		t.Errorf("only %d pod versions after the gate's first write: the agent's writes were not put to the test", after)
	}
}

// TestReadyFollowsAReadinessGateWrittenThroughTheAPI: a readiness gate of
// the user's, kept next to the gate's, whose condition the test writes as
// a controller would (client-go, pods/status): the agent keeps Ready False
// in the kubelet's words while it does not exist or is False, and
// publishes Ready as soon as it turns True. No readiness probe runs in the
// pod (withoutGateProbe), so no probe brings that news.
func TestReadyFollowsAReadinessGateWrittenThroughTheAPI(t *testing.T) {
	t.Parallel()
	h := newGateHarness(t)
	h.startInjectedWith(podYAML("lb", `  terminationGracePeriodSeconds: 2
  readinessGates: [{conditionType: example.com/lb-registered}]
  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    ports: [{containerPort: 8080}]
`), withoutGateProbe)
	// Once the gate's condition is True, only the user's gate is missing.
	h.waitPod("lb", "waiting for the user's readiness gate only", func(p *corev1.Pod) bool {
		r := podCondition(p, corev1.PodReady)
		return r != nil && r.Status == corev1.ConditionFalse && r.Reason == podstatus.ReasonReadinessGatesNotReady &&
			r.Message == `corresponding condition of pod readiness gate "example.com/lb-registered" does not exist.`
	})

	client, err := corev1client.NewForConfig(&rest.Config{Host: "http://" + h.api})
	if err != nil {
		t.Fatal(err)
	}
	set := func(status corev1.ConditionStatus) {
		t.Helper()
		patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"example.com/lb-registered","status":%q}]}}`, status)
		if _, err := client.Pods("default").Patch(context.Background(), "lb", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
	}
	set(corev1.ConditionFalse)
	p := h.waitPod("lb", "not ready, the user's gate False", func(p *corev1.Pod) bool {
		r := podCondition(p, corev1.PodReady)
		return r != nil && strings.Contains(r.Message, `"example.com/lb-registered" is not "True", but False`)
	})
	if r := podCondition(p, corev1.PodReady); r.Status != corev1.ConditionFalse || r.Reason != podstatus.ReasonReadinessGatesNotReady {
		t.Errorf("Ready %+v", r)
	}
	set(corev1.ConditionTrue)
	p = h.waitPod("lb", "ready once the user's gate is True", podReady)
	if c := podCondition(p, "example.com/lb-registered"); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("the user's condition %+v was lost", c)
	}
}

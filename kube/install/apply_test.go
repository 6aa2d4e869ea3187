package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/podgate/podgate/internal/k8sbin"
	"github.com/podgate/podgate/kube/deploy"
)

// The overlay as kubectl's kustomize builds it: every Deployment and the
// node status service's DaemonSet of podgate's image by digest, the webhook injecting the gate's image by
// its digest; with OnlyRouter, the webhook and the activator told that the
// activator is the only router, and the activator's preStop sleep 1 s.
func TestTheOverlayPinsPodgatesImageAndInjectsTheGatesByDigest(t *testing.T) {
	for _, onlyRouter := range []bool{false, true} {
		t.Run(fmt.Sprintf("onlyRouter=%v", onlyRouter), func(t *testing.T) { testOverlay(t, onlyRouter) })
	}
}

func testOverlay(t *testing.T, onlyRouter bool) {
	kubectl, err := k8sbin.Path(k8sbin.Kubectl)
	if err != nil {
		t.Fatal(err)
	}
	const (
		digest  = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
		gateRef = deploy.GateImage + "@sha256:2222222222222222222222222222222222222222222222222222222222222222"
	)
	dir := t.TempDir()
	if err := writeOverlay(dir, digest, gateRef, onlyRouter); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(kubectl, "kustomize", dir).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v", dir, err)
	}
	// Every image by digest: nothing of the release's tags (nor :latest)
	// is left for the node to look up.
	for _, tag := range []string{":latest", ":" + deploy.Version} {
		if bytes.Contains(out, []byte(tag)) {
			t.Errorf("kubectl kustomize's output names %s:\n%s", tag, out)
		}
	}
	deployments := map[string]appsv1.Deployment{}
	var nodeStatus *appsv1.DaemonSet
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		var raw runtime.RawExtension
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("kubectl kustomize's output: %v", err)
		}
		var d appsv1.Deployment
		if err := json.Unmarshal(raw.Raw, &d); err != nil {
			t.Fatal(err)
		}
		switch {
		case d.Kind == "Deployment":
			deployments[d.Name] = d
		case d.Kind == "DaemonSet" && d.Name == deploy.NodeStatus:
			nodeStatus = &appsv1.DaemonSet{}
			if err := json.Unmarshal(raw.Raw, nodeStatus); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The node status service runs podgate's image by digest too, its
	// readiness probed every second as the Deployments'.
	if nodeStatus == nil {
		t.Fatalf("no DaemonSet %s in:\n%s", deploy.NodeStatus, out)
	}
	if c := nodeStatus.Spec.Template.Spec.Containers[0]; c.Image != deploy.Image+"@"+digest || c.ReadinessProbe.PeriodSeconds != 1 {
		t.Errorf("%s: image %s, readiness every %d s; want podgate's by digest, every second", deploy.NodeStatus, c.Image, c.ReadinessProbe.PeriodSeconds)
	}
	for _, name := range []string{deploy.Webhook, deploy.Activator} {
		d, ok := deployments[name]
		if !ok {
			t.Fatalf("no Deployment %s in:\n%s", name, out)
		}
		c := d.Spec.Template.Spec.Containers[0]
		if c.Image != deploy.Image+"@"+digest {
			t.Errorf("%s: image %s, want podgate's by digest", name, c.Image)
		}
		// The base names the release's gate image; the overlay's comes
		// after it, and the last --gate-image is the one the webhook takes.
		var lastGate string
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--gate-image="); ok {
				lastGate = v
			}
		}
		if gated := lastGate == gateRef; gated != (name == deploy.Webhook) {
			t.Errorf("%s: args %q; want the last --gate-image=%s on the webhook only", name, c.Args, gateRef)
		}
		flag := map[string]string{deploy.Webhook: "--only-router=activator", deploy.Activator: "--only-router"}[name]
		if got := slices.Contains(c.Args, flag); got != onlyRouter {
			t.Errorf("%s: args %q; want %s: %v", name, c.Args, flag, onlyRouter)
		}
		if name == deploy.Activator {
			sleep, want := c.Lifecycle.PreStop.Sleep.Seconds, int64(5)
			if onlyRouter {
				want = 1
			}
			if sleep != want {
				t.Errorf("%s: preStop sleeps %d s, want %d", name, sleep, want)
			}
		}
	}
}

// The install waits for the node status service on every node: a cluster
// up whose gates found no service on their node would have its injected
// pods sit unready.
func TestDaemonSetNotReady(t *testing.T) {
	for _, tc := range []struct {
		name   string
		gen    int64
		status appsv1.DaemonSetStatus
		ready  bool
	}{
		{"not observed yet", 2, appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 1, UpdatedNumberScheduled: 1, NumberReady: 1}, false},
		{"scheduled on no node yet", 1, appsv1.DaemonSetStatus{ObservedGeneration: 1}, false},
		{"its pod not ready", 1, appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 1, UpdatedNumberScheduled: 1}, false},
		{"an old pod ready, the new one not", 1, appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 1, NumberReady: 1}, false},
		{"ready on one of two nodes", 1, appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 2, UpdatedNumberScheduled: 2, NumberReady: 1}, false},
		{"ready on every node", 1, appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 2, UpdatedNumberScheduled: 2, NumberReady: 2}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := &appsv1.DaemonSet{Status: tc.status}
			ds.Generation = tc.gen
			if why := daemonSetNotReady(ds); (why == "") != tc.ready {
				t.Errorf("daemonSetNotReady = %q, want ready %v", why, tc.ready)
			}
		})
	}
}

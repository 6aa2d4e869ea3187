package gatestatus

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/podgate/podgate/gate"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/gate/podapi"
)

const smp = "application/strategic-merge-patch+json"

// TestAPatchOfAnyOtherConditionOrFieldIsRefused sends, from the pod's
// own IP, patches of its own pod's status that do more than set the
// gate's condition: each is refused 403 naming the field, the pod is
// left as it was, and the gate's pod gets one GateRequestRefused per
// cause (a gate retrying does not flood the API with Events).
func TestAPatchOfAnyOtherConditionOrFieldIsRefused(t *testing.T) {
	h := startService(t, nil)
	ip := podIP()
	p := h.createPod("patcher", ip, podOpts{gateStarted: time.Now()})
	c := from(ip)
	url := h.url + "/api/v1/namespaces/default/pods/patcher/status"
	gateCond := `{"type":"podgate.dev/containers-ready","status":"True"}`
	for _, tc := range []struct {
		name, contentType, body, want string
	}{
		{"another condition", smp, `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`, `status.conditions[0].type: "Ready"`},
		{"the phase beside the condition", smp, `{"status":{"phase":"Failed","conditions":[` + gateCond + `]}}`, "status.phase:"},
		{"a label", smp, `{"metadata":{"labels":{"a":"b"}},"status":{"conditions":[` + gateCond + `]}}`, "metadata:"},
		{"two conditions", smp, `{"status":{"conditions":[` + gateCond + `,{"type":"Ready","status":"True"}]}}`, "exactly one condition"},
		{"a directive", smp, `{"status":{"$setElementOrder/conditions":[{"type":"Ready"}],"conditions":[` + gateCond + `]}}`, "status.$setElementOrder/conditions:"},
		{"a field no condition has", smp, `{"status":{"conditions":[{"type":"podgate.dev/containers-ready","status":"True","$patch":"replace"}]}}`, "status.conditions[0].$patch:"},
		{"a status that is none", smp, `{"status":{"conditions":[{"type":"podgate.dev/containers-ready","status":"Maybe"}]}}`, "must be True, False or Unknown"},
		{"a merge patch", "application/merge-patch+json", `{"status":{"conditions":[` + gateCond + `]}}`, "a merge patch would replace every condition"},
		{"a JSON patch", "application/json-patch+json", `[{"op":"remove","path":"/status/conditions"}]`, `content type "application/json-patch+json"`},
		{"not JSON", smp, `status`, "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, c, http.MethodPatch, url, tc.contentType, tc.body)
			st := status(t, body)
			if code != http.StatusForbidden || st.Reason != metav1.StatusReasonForbidden || !strings.Contains(st.Message, tc.want) ||
				!strings.Contains(st.Message, ip.String()) {
				t.Errorf("got %d %s %q, want 403 Forbidden naming %q and the caller %s", code, st.Reason, st.Message, tc.want, ip)
			}
		})
	}
	got, err := h.admin.CoreV1().Pods("default").Get(context.Background(), "patcher", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != p.ResourceVersion {
		t.Errorf("the pod changed (version %s to %s): %+v", p.ResourceVersion, got.ResourceVersion, got.Status)
	}
	if n, _ := h.patches.seen(); n != 0 {
		t.Errorf("%d patches reached the API server, want none", n)
	}
	// One Event per cause: the patch type and the patch's content.
	eventually(t, "GateRequestRefused is written for both causes", func() bool { return len(h.events(p, eventRequestRefused)) == 2 })
	h.svc.events.running.Wait() // the writes asked for so far
	if n := len(h.events(p, eventRequestRefused)); n != 2 {
		t.Errorf("%d GateRequestRefused Events after 10 refusals of 2 causes within a minute, want 2", n)
	}
}

// TestACallerWhoseIPIsNoPodOfThisNodeIsRefused asks for a pod of the
// node from addresses that are not that pod's: no pod's, a pod's on
// another node, a hostNetwork pod's (it shares the node's address, so
// its source address says nothing), a finished pod's (its address may be
// another pod's now), an address two running pods claim. Each list, watch and patch is refused 403 naming
// the address.
func TestACallerWhoseIPIsNoPodOfThisNodeIsRefused(t *testing.T) {
	h := startService(t, nil)
	h.createPod("target", podIP(), podOpts{gateStarted: time.Now()})
	elsewhere, hostNet, finished := podIP(), podIP(), podIP()
	if _, err := h.admin.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: h.node + "-other"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.createPod("on-another-node", elsewhere, podOpts{node: h.node + "-other"})
	h.createPod("host-network", hostNet, podOpts{hostNetwork: true})
	h.createPod("finished", finished, podOpts{phase: corev1.PodSucceeded})
	// Two running pods with one address (a network gone wrong): neither
	// can be told from the other, so neither is served.
	twice := podIP()
	h.createPod("twin-a", twice, podOpts{})
	h.createPod("twin-b", twice, podOpts{})
	for _, name := range []string{"twin-a", "twin-b"} {
		code, body := do(t, from(twice), http.MethodGet, h.url+"/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3D"+name, "", "")
		if st := status(t, body); code != http.StatusForbidden || !strings.Contains(st.Message, twice.String()+" is the pod IP of 2 pods of node "+h.node) {
			t.Errorf("%s from the shared address: %d %q, want 403 naming both pods", name, code, st.Message)
		}
	}
	for _, tc := range []struct {
		name   string
		caller netip.Addr
	}{
		{"an address of no pod", podIP()},
		{"a pod of another node", elsewhere},
		{"a hostNetwork pod", hostNet},
		{"a finished pod", finished},
	} {
		for _, req := range []struct{ method, path, contentType, body string }{
			{http.MethodGet, "/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dtarget", "", ""},
			{http.MethodGet, "/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dtarget&watch=true", "", ""},
			{http.MethodPatch, "/api/v1/namespaces/default/pods/target/status", smp, `{"status":{"conditions":[{"type":"podgate.dev/containers-ready","status":"True"}]}}`},
		} {
			t.Run(tc.name+" "+req.method+" "+req.path, func(t *testing.T) {
				ip := tc.caller.String()
				code, body := do(t, from(tc.caller), req.method, h.url+req.path, req.contentType, req.body)
				st := status(t, body)
				if code != http.StatusForbidden || !strings.Contains(st.Message, ip+" is the pod IP of no running pod of node "+h.node) {
					t.Errorf("got %d %q, want 403 naming %s as no pod of the node", code, st.Message, ip)
				}
			})
		}
	}
	if n, _ := h.patches.seen(); n != 0 {
		t.Errorf("%d patches reached the API server, want none", n)
	}
}

// TestACallerAskingForAnotherPodIsRefusedAndAnEventWritten has a pod of
// the node ask for its neighbour: refused 403 naming the caller's address
// and pod and what it asked, with GateRequestRefused on the caller's pod
// written as the kubelet writes Events (the pod as involvedObject, the
// service and the node as source) — once per minute at most.
func TestACallerAskingForAnotherPodIsRefusedAndAnEventWritten(t *testing.T) {
	h := startService(t, nil)
	ip := podIP()
	caller := h.createPod("nosy", ip, podOpts{gateStarted: time.Now()})
	h.createPod("victim", podIP(), podOpts{gateStarted: time.Now()})
	c := from(ip)
	for _, req := range []struct{ method, path, contentType, body, verb string }{
		{http.MethodGet, "/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dvictim", "", "", "list"},
		{http.MethodGet, "/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dvictim&watch=true", "", "", "watch"},
		{http.MethodPatch, "/api/v1/namespaces/default/pods/victim/status", smp, `{"status":{"conditions":[{"type":"podgate.dev/containers-ready","status":"True"}]}}`, "patch"},
		{http.MethodGet, "/api/v1/namespaces/other/pods?fieldSelector=metadata.name%3Dnosy", "", "", "list"},
	} {
		code, body := do(t, c, req.method, h.url+req.path, req.contentType, req.body)
		st := status(t, body)
		want := fmt.Sprintf("%s of pod ", req.verb)
		if code != http.StatusForbidden || !strings.Contains(st.Message, want) || !strings.Contains(st.Message, "from "+ip.String()) ||
			!strings.Contains(st.Message, "the caller is pod default/nosy") {
			t.Errorf("%s %s: got %d %q, want 403 naming the request, the caller's address and its pod", req.method, req.path, code, st.Message)
		}
	}
	// Everything else is refused too, without a pod to blame.
	if code, body := do(t, c, http.MethodGet, h.url+"/api/v1/namespaces/default/pods/nosy", "", ""); code != http.StatusForbidden {
		t.Errorf("GET of a pod by name: %d %s, want 403", code, body)
	}
	eventually(t, "GateRequestRefused on the caller's pod", func() bool { return len(h.events(caller, eventRequestRefused)) > 0 })
	h.svc.events.running.Wait() // the writes asked for so far
	evs := h.events(caller, eventRequestRefused)
	if len(evs) != 1 {
		t.Fatalf("%d GateRequestRefused Events after 4 refusals within a minute, want 1", len(evs))
	}
	ev := evs[0]
	if ev.Type != corev1.EventTypeWarning || ev.Source.Component != Component || ev.Source.Host != h.node || ev.ReportingController != Component ||
		ev.InvolvedObject.Kind != "Pod" || ev.InvolvedObject.Name != "nosy" || !strings.Contains(ev.Message, "victim") {
		t.Errorf("Event %+v, want a Warning on pod nosy from %s on %s naming what it asked", ev, Component, h.node)
	}
	if evs := h.events(caller, eventRequestRefused); len(evs) != 1 {
		t.Fatalf("%d events", len(evs))
	}
	// A minute on, the next refusal is told again.
	h.clk.Step(DefaultEventInterval)
	do(t, c, http.MethodGet, h.url+"/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dvictim", "", "")
	eventually(t, "a second GateRequestRefused a minute later", func() bool { return len(h.events(caller, eventRequestRefused)) == 2 })
}

// TestAWriteTheAPIRefusesLeavesGateConditionNotWritten runs the service
// with an identity that may read pods and write Events but not patch
// pods/status: the gate's write is answered Forbidden, which the gate's
// writer reports as gate.ErrNotPermitted saying where it was refused,
// and the pod gets GateConditionNotWritten with the API server's error.
func TestAWriteTheAPIRefusesLeavesGateConditionNotWritten(t *testing.T) {
	cp := controlPlane(t)
	token := serviceAccountToken(t, cp, "node-status-without-patch", []string{"get", "list", "watch"}, false)
	h := startService(t, func(_ *Options, cfg *rest.Config) {
		cfg.CertData, cfg.KeyData, cfg.BearerToken = nil, nil, token
	})
	ip := podIP()
	p := h.createPod("refused", ip, podOpts{gateStarted: time.Now()})
	w, err := podapi.ConditionWriterForConfig(h.gateConfig(ip), "default", "refused")
	if err != nil {
		t.Fatal(err)
	}
	err = w.WriteCondition(context.Background(), gate.PodCondition{Ready: true, LastTransition: time.Now()})
	if !errors.Is(err, gate.ErrNotPermitted) || !strings.Contains(err.Error(), "the node status service could not write the condition") ||
		!strings.Contains(err.Error(), `cannot patch resource "pods/status"`) || !strings.Contains(err.Error(), "status source at "+h.url) {
		t.Fatalf("write: %v; want ErrNotPermitted naming the service and the API's refusal", err)
	}
	eventually(t, "GateConditionNotWritten on the pod", func() bool { return len(h.events(p, eventNotWritten)) == 1 })
	ev := h.events(p, eventNotWritten)[0]
	if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Message, `cannot patch resource "pods/status"`) {
		t.Errorf("Event %+v, want a Warning with the API server's error", ev)
	}
	got, err := h.admin.CoreV1().Pods("default").Get(context.Background(), "refused", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := condition(got, contract.ContainersReadyCondition); c != nil {
		t.Errorf("the condition was written: %+v", c)
	}
}

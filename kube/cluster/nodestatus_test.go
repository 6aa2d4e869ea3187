package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/podgate/podgate/admission/inject"
	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/node/images"
)

func podCondition(p *corev1.Pod, typ string) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if string(p.Status.Conditions[i].Type) == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// fetchFrom has the test app of the pod at ip send a request (its
// /fetch): method to target with body as a strategic merge patch, with
// the pod's own service-account token when token. It answers the status
// code the pod got and the body.
func (u *upProcess) fetchFrom(t *testing.T, ip, method, target, body string, token bool) (int, string) {
	t.Helper()
	q := url.Values{"url": {target}, "method": {method}}
	if body != "" {
		q.Set("content-type", "application/strategic-merge-patch+json")
	}
	if token {
		q.Set("token", "serviceaccount")
	}
	c := u.httpClient()
	defer c.CloseIdleConnections()
	resp, err := c.Post("http://"+net.JoinHostPort(ip, "8080")+"/fetch?"+q.Encode(), "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("%s %s from %s: %v", method, target, ip, err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s from %s: the test app answered %d %q", method, target, ip, resp.StatusCode, b.String())
	}
	code, rest, _ := strings.Cut(b.String(), "\n")
	var n int
	if _, err := fmt.Sscan(code, &n); err != nil {
		t.Fatalf("%s %s from %s: %q", method, target, ip, b.String())
	}
	return n, rest
}

// apiServerForPods is the API server as the pods of the cluster reach it:
// KUBERNETES_SERVICE_HOST and _PORT of a gate's process (every container
// of a pod gets them from the node).
func (u *upProcess) apiServerForPods(t *testing.T, pod string) string {
	t.Helper()
	for p, argv := range u.processes() {
		if len(argv) < 2 || argv[1] != "gate" {
			continue
		}
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p))
		vars := map[string]string{}
		for _, kv := range strings.Split(string(env), "\x00") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				vars[k] = v
			}
		}
		if vars[contract.EnvServingPod] == pod && vars["KUBERNETES_SERVICE_HOST"] != "" {
			return "https://" + net.JoinHostPort(vars["KUBERNETES_SERVICE_HOST"], vars["KUBERNETES_SERVICE_PORT"])
		}
	}
	t.Fatalf("no gate process of pod %s with KUBERNETES_SERVICE_HOST", pod)
	return ""
}

// testLeastPrivilegeFromThePod tries, from inside an injected pod of web
// in shop (its test app's /fetch), what a compromised container could:
// with the pod's own service-account token at the API server, and at its
// node's status service (which knows the pod by its address). Only the
// gate's own reads and its condition of its own pod get through the
// service; the API server refuses the pod everything.
func testLeastPrivilegeFromThePod(t *testing.T, u *upProcess) {
	ctx := t.Context()
	list, err := u.client.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("pods of web: %v %v", list, err)
	}
	a, b := list.Items[0], list.Items[1]
	api := u.apiServerForPods(t, a.Name)
	service := "http://" + net.JoinHostPort(a.Status.HostIP, fmt.Sprint(contract.NodeStatusPort))
	status := func(base, pod string) string { return base + "/api/v1/namespaces/shop/pods/" + pod + "/status" }
	cond := func(typ, s string) string {
		return fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":%q,"reason":"FromAContainer"}]}}`, typ, s)
	}
	gateFalse := cond(contract.ContainersReadyCondition, "False")
	for _, tc := range []struct {
		name, method, target, body string
		token                      bool
		want                       int
	}{
		{"the API server refuses the pod's token another pod's gate condition", http.MethodPatch, status(api, b.Name), gateFalse, true, http.StatusForbidden},
		{"the API server refuses the pod's token its own pod's gate condition", http.MethodPatch, status(api, a.Name), gateFalse, true, http.StatusForbidden},
		{"the API server refuses the pod's token its own pod's Ready condition", http.MethodPatch, status(api, a.Name), cond("Ready", "False"), true, http.StatusForbidden},
		{"the API server refuses the pod's token a read of its own pod", http.MethodGet, api + "/api/v1/namespaces/shop/pods/" + a.Name, "", true, http.StatusForbidden},
		{"the node status service serves the pod its own pod", http.MethodGet, service + "/api/v1/namespaces/shop/pods?fieldSelector=" + url.QueryEscape("metadata.name="+a.Name), "", false, http.StatusOK},
		{"the node status service refuses the pod another pod", http.MethodGet, service + "/api/v1/namespaces/shop/pods?fieldSelector=" + url.QueryEscape("metadata.name="+b.Name), "", false, http.StatusForbidden},
		{"the node status service refuses the pod another pod's gate condition", http.MethodPatch, status(service, b.Name), gateFalse, false, http.StatusForbidden},
		{"the node status service refuses the pod its own pod's Ready condition", http.MethodPatch, status(service, a.Name), cond("Ready", "False"), false, http.StatusForbidden},
		{"the node status service refuses the pod another field of its own pod's status", http.MethodPatch, status(service, a.Name), `{"status":{"message":"from a container"}}`, false, http.StatusForbidden},
		{"the node status service refuses the pod its own pod's labels", http.MethodPatch, status(service, a.Name), `{"metadata":{"labels":{"x":"y"}}}`, false, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := u.fetchFrom(t, a.Status.PodIP, tc.method, tc.target, tc.body, tc.token)
			if code != tc.want {
				t.Errorf("%s %s from pod %s: %d %q, want %d", tc.method, tc.target, a.Name, code, body, tc.want)
			}
			if tc.want == http.StatusOK && !strings.Contains(body, `"name":"`+a.Name+`"`) {
				t.Errorf("the pod's own pod: %q, want pod %s", body, a.Name)
			}
		})
	}
	// The refusals show on the asking pod.
	eventually(t, waitLimit, "Event GateRequestRefused on pod "+a.Name, func() (bool, string) {
		evs, err := u.client.CoreV1().Events("shop").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + a.Name + ",reason=GateRequestRefused"})
		if err != nil {
			return false, err.Error()
		}
		return len(evs.Items) > 0 && evs.Items[0].Type == corev1.EventTypeWarning, fmt.Sprintf("%d events", len(evs.Items))
	})
	// Nothing of what was refused happened.
	for _, p := range []corev1.Pod{a, b} {
		now, err := u.client.CoreV1().Pods("shop").Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range []string{string(corev1.PodReady), contract.ContainersReadyCondition} {
			if c := podCondition(now, typ); c == nil || c.Status != corev1.ConditionTrue || c.Reason == "FromAContainer" {
				t.Errorf("pod %s: condition %s %+v, want True as its gate wrote it", p.Name, typ, c)
			}
		}
		if now.Status.Message != "" || now.Labels["x"] != "" {
			t.Errorf("pod %s: message %q, labels %v: changed from inside a pod", p.Name, now.Status.Message, now.Labels)
		}
	}
}

// testGateNotConnectedShowsInDescribe: a broken setup shows on the pod.
// A pod whose gate cannot reach its node's status service — here its
// status source names a port of the node's address where nothing listens,
// as a NetworkPolicy that drops the gate's egress to the node would leave
// it — gets the service's Event GateNotConnected after the grace (30 s),
// visible in `kubectl describe pod`, instead of sitting unready with
// nothing but the gate's log to say why.
func testGateNotConnectedShowsInDescribe(t *testing.T, u *upProcess, gateImage string) {
	ctx := t.Context()
	u.namespace(t, "stale", map[string]string{"podgate.dev/inject": "enabled"})
	m, err := workload.Load(strings.NewReader(`apiVersion: v1
kind: Pod
metadata: {name: old, namespace: stale}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - {name: app, image: `+images.TestappImage+`, args: [--port, "8080"], ports: [{containerPort: 8080}]}
`), "old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w, err := inject.Gate(m.Workloads[0], inject.Options{GateImage: gateImage})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: *w.Template.ObjectMeta.DeepCopy(), Spec: *w.Template.Spec.DeepCopy()}
	pod.Name, pod.Namespace = "old", "stale"
	unreachable := "http://$(" + contract.EnvHostIP + "):1"
	gate := contract.GateContainer(&pod.Spec)
	for i := range gate.Env {
		if gate.Env[i].Name == contract.EnvStatusSource {
			gate.Env[i].Value = unreachable
		}
	}
	created, err := u.client.CoreV1().Pods("stale").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := contract.GateContainer(&created.Spec); g == nil || !slices.ContainsFunc(g.Env, func(e corev1.EnvVar) bool {
		return e.Name == contract.EnvStatusSource && e.Value == unreachable
	}) {
		t.Fatalf("the webhook changed the injected gate: %+v", g)
	}
	begin := time.Now()
	var ev corev1.Event
	eventually(t, waitLimit, "Event GateNotConnected on pod stale/old", func() (bool, string) {
		list, err := u.client.CoreV1().Events("stale").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=old"})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			seen = append(seen, e.Reason)
			if e.Reason == "GateNotConnected" {
				ev = e
				return true, ""
			}
		}
		return false, fmt.Sprintf("events %v", seen)
	})
	t.Logf("GateNotConnected %s after the pod was created: %s", time.Since(begin).Round(time.Second), ev.Message)
	if ev.Type != corev1.EventTypeWarning || ev.InvolvedObject.UID != created.UID || (ev.Source.Component != "podgate-node-status" && ev.ReportingController != "podgate-node-status") {
		t.Errorf("event %s %s of %s/%s (uid %s) from %q/%q: want a Warning on the pod from podgate-node-status",
			ev.Type, ev.Reason, ev.InvolvedObject.Namespace, ev.InvolvedObject.Name, ev.InvolvedObject.UID, ev.Source.Component, ev.ReportingController)
	}
	out := u.kubectl(t, "describe", "pod", "-n", "stale", "old")
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "GateNotConnected") {
			t.Logf("kubectl describe pod: %s", strings.TrimSpace(l))
		}
	}
	if !strings.Contains(out, "GateNotConnected") {
		t.Errorf("kubectl describe pod does not show GateNotConnected:\n%s", out)
	}
	p, err := u.client.CoreV1().Pods("stale").Get(ctx, "old", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := ready(p); ok {
		t.Error("the pod whose gate cannot write its condition is Ready")
	}
}

// testNodeStatusServiceOwnToken: the node status service's own token —
// the one the node mounted into its DaemonSet pod, bound to that pod and
// so to this node — may write the gates' condition of this node's pods
// and nothing else: the policy podgate-node-status refuses another
// condition, another status field, and any pod of another node.
func testNodeStatusServiceOwnToken(t *testing.T, u *upProcess) {
	ctx := t.Context()
	as := kubernetes.NewForConfigOrDie(&rest.Config{Host: u.config.Host, BearerToken: u.nodeStatusToken(t),
		TLSClientConfig: rest.TLSClientConfig{CAData: u.config.CAData, CAFile: u.config.CAFile}})
	// A node no kubelet runs, and a pod bound to it.
	const elsewhere = "elsewhere"
	if _, err := u.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: elsewhere}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = u.client.CoreV1().Nodes().Delete(context.Background(), elsewhere, metav1.DeleteOptions{}) }()
	u.namespace(t, "far", nil)
	if _, err := u.client.CoreV1().Pods("far").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "far", Namespace: "far"},
		Spec: corev1.PodSpec{NodeName: elsewhere, AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "app", Image: images.TestappImage}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := u.client.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(list.Items) == 0 {
		t.Fatalf("pods of web: %v %v", list, err)
	}
	web := list.Items[0].Name
	cond := func(typ, status string) string {
		return fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":%q}]}}`, typ, status)
	}
	for _, tc := range []struct {
		name, ns, pod, patch string
		refused              string // "" allowed
	}{
		// What the service writes anyway: its gate's condition, as it is.
		{"the gate's condition of a pod on its node", "shop", web, cond(contract.ContainersReadyCondition, "True"), ""},
		{"not the gate's condition of a pod on another node", "far", "far", cond(contract.ContainersReadyCondition, "True"),
			"holds the token of node podgate, pod far/far is on node elsewhere"},
		{"not the Ready condition of a pod on its node", "shop", web, cond("Ready", "False"), "changes another condition"},
		{"not another status field of a pod on its node", "shop", web, `{"status":{"message":"from the node status service"}}`, "changes another status field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := as.CoreV1().Pods(tc.ns).Patch(ctx, tc.pod, types.StrategicMergePatchType, []byte(tc.patch), metav1.PatchOptions{}, "status")
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refused != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "podgate-node-status") || !strings.Contains(err.Error(), tc.refused)):
				t.Errorf("got %v, want Forbidden by the policy podgate-node-status: %q", err, tc.refused)
			}
		})
	}
}

// nodeStatusToken is the token the node mounted into the node status
// service's pod: its process's kubeconfig names the file.
func (u *upProcess) nodeStatusToken(t *testing.T) string {
	t.Helper()
	for pid, argv := range u.processes() {
		if len(argv) < 2 || argv[1] != "node-status" {
			continue
		}
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		for _, kv := range strings.Split(string(env), "\x00") {
			kc, ok := strings.CutPrefix(kv, "KUBECONFIG=")
			if !ok {
				continue
			}
			root := fmt.Sprintf("/proc/%d/root", pid)
			cfg, err := clientcmd.LoadFromFile(filepath.Join(root, kc))
			if err != nil {
				t.Fatal(err)
			}
			for _, ai := range cfg.AuthInfos {
				if ai.TokenFile != "" {
					b, err := os.ReadFile(filepath.Join(root, ai.TokenFile))
					if err != nil {
						t.Fatal(err)
					}
					return strings.TrimSpace(string(b))
				}
			}
		}
	}
	t.Fatal("no node-status process with a KUBECONFIG naming a token file")
	return ""
}

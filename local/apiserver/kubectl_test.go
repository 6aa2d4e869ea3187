package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podgate/podgate/internal/k8sbin"
	"github.com/podgate/podgate/kube/controlplane"
	"github.com/podgate/podgate/kube/knative"
	"github.com/podgate/podgate/local/servingv1"
)

// The same objects are written to a real kube-apiserver and to podgate's
// control API, and the real kubectl prints `get` of each: the headers and
// every cell but AGE (the two servers stamp creation at slightly different
// times) must be the same, and so must the Tables the two serve (column
// names, types, formats, priorities, descriptions; cells; row conditions).

// kubectlOn runs the real kubectl against one server.
type kubectlOn struct {
	bin, kubeconfig, cacheDir string
}

func (k kubectlOn) run(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, append([]string{"--kubeconfig", k.kubeconfig, "--cache-dir", k.cacheDir, "-n", "default"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// kubectlFor writes a kubeconfig for the podgate server at addr (plain
// HTTP, no credentials).
func kubectlFor(t *testing.T, bin, addr string) kubectlOn {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	if err := os.WriteFile(cfg, []byte(`apiVersion: v1
kind: Config
clusters: [{name: podgate, cluster: {server: "http://`+addr+`"}}]
contexts: [{name: podgate, context: {cluster: podgate, namespace: default}}]
current-context: podgate
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubectlOn{bin: bin, kubeconfig: cfg, cacheDir: filepath.Join(dir, "cache")}
}

// cellsBelowHeader splits kubectl's table into cells by the header's
// column offsets (cells may hold single spaces, or be empty), and drops
// the AGE column.
func cellsBelowHeader(t *testing.T, out string) [][]string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	header := lines[0]
	var starts []int
	for _, m := range regexp.MustCompile(`\S+( \S+)*`).FindAllStringIndex(header, -1) {
		starts = append(starts, m[0])
	}
	var rows [][]string
	for _, line := range lines {
		var cells []string
		for i, s := range starts {
			end := len(line)
			if i+1 < len(starts) {
				end = min(starts[i+1], len(line))
			}
			cell := ""
			if s < len(line) {
				cell = strings.TrimSpace(line[s:end])
			}
			if strings.TrimSpace(header[s:min(len(header), s+4)]) == "AGE" {
				cell = "(age)"
			}
			cells = append(cells, cell)
		}
		rows = append(rows, cells)
	}
	return rows
}

// sameTable checks two Tables (JSON) of the same objects agree but for
// the Age column's cells.
func sameTable(t *testing.T, real, local []byte) {
	t.Helper()
	var a, b metav1.Table
	if err := json.Unmarshal(real, &a); err != nil {
		t.Fatalf("kube-apiserver's Table: %v\n%s", err, real)
	}
	if err := json.Unmarshal(local, &b); err != nil {
		t.Fatalf("podgate's Table: %v\n%s", err, local)
	}
	if a.Kind != b.Kind || a.APIVersion != b.APIVersion {
		t.Errorf("kind %s/%s, kube-apiserver's %s/%s", b.APIVersion, b.Kind, a.APIVersion, a.Kind)
	}
	if !reflect.DeepEqual(a.ColumnDefinitions, b.ColumnDefinitions) {
		t.Errorf("columns differ:\npodgate:        %+v\nkube-apiserver: %+v", b.ColumnDefinitions, a.ColumnDefinitions)
	}
	if len(a.Rows) != len(b.Rows) {
		t.Fatalf("%d rows, kube-apiserver's %d", len(b.Rows), len(a.Rows))
	}
	for i := range a.Rows {
		for j, c := range a.ColumnDefinitions {
			if c.Name == "Age" && j < len(a.Rows[i].Cells) && j < len(b.Rows[i].Cells) {
				a.Rows[i].Cells[j], b.Rows[i].Cells[j] = nil, nil
			}
		}
		if !reflect.DeepEqual(a.Rows[i].Cells, b.Rows[i].Cells) || !reflect.DeepEqual(a.Rows[i].Conditions, b.Rows[i].Conditions) {
			t.Errorf("row %d:\npodgate:        %v %v\nkube-apiserver: %v %v", i, b.Rows[i].Cells, b.Rows[i].Conditions, a.Rows[i].Cells, a.Rows[i].Conditions)
		}
	}
}

// conformanceLabel marks the objects the test writes, apart from those the
// real control plane writes itself (the node controller's events).
const conformanceLabel = "conformance=yes"

var conformanceLabels = map[string]string{"conformance": "yes"}

// tableOf GETs path as kubectl asks for a Table (no object in the rows).
func tableOf(t *testing.T, c rest.Interface, path string) []byte {
	t.Helper()
	body, err := c.Get().AbsPath(path).Param("includeObject", "None").Param("labelSelector", conformanceLabel).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json").
		DoRaw(t.Context())
	if err != nil {
		t.Fatalf("GET %s as a Table: %v\n%s", path, err, body)
	}
	return body
}

func TestKubectlGetPrintsWhatKubeAPIServerPrints(t *testing.T) {
	bin, err := k8sbin.Path(k8sbin.Kubectl)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := controlplane.Start(t.Context(), controlplane.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	s := startServer(t, Config{})
	realCS, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	localCS, _ := s.clientset(t)
	realKubectl := kubectlOn{bin: bin, kubeconfig: cp.AdminKubeconfig(), cacheDir: filepath.Join(t.TempDir(), "cache")}
	localKubectl := kubectlFor(t, bin, s.addr)

	// compare runs kubectl get (args) and get -o wide on both servers;
	// headers are what kubectl prints for each (the fields of the first
	// line), so a server that served no Table (NAME AGE) cannot pass.
	compare := func(t *testing.T, paths map[string]string, headers [2]string, args ...string) {
		t.Helper()
		for i, wide := range []bool{false, true} {
			a := append([]string{"-l", conformanceLabel}, args...)
			if wide {
				a = append(a, "-o", "wide")
			}
			real, local := realKubectl.run(t, a...), localKubectl.run(t, a...)
			if !reflect.DeepEqual(cellsBelowHeader(t, real), cellsBelowHeader(t, local)) {
				t.Errorf("kubectl %s:\npodgate:\n%s\nkube-apiserver:\n%s", strings.Join(a, " "), local, real)
			}
			if got := strings.Join(cellsBelowHeader(t, local)[0], "|"); got != headers[i] {
				t.Errorf("kubectl %s header = %s, want %s", strings.Join(a, " "), got, headers[i])
			}
		}
		for _, p := range paths {
			sameTable(t, tableOf(t, realCS.CoreV1().RESTClient(), p), tableOf(t, localCS.CoreV1().RESTClient(), p))
		}
	}

	t.Run("pods", func(t *testing.T) {
		if _, err := realCS.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, p := range conformancePods() {
			for _, cs := range []kubernetes.Interface{realCS, localCS} {
				writePod(t, cs, p)
			}
		}
		compare(t, map[string]string{"list": "/api/v1/namespaces/default/pods", "one": "/api/v1/namespaces/default/pods/crash-loop"},
			[2]string{"NAME|READY|STATUS|RESTARTS|(age)", "NAME|READY|STATUS|RESTARTS|(age)|IP|NODE|NOMINATED NODE|READINESS GATES"}, "get", "pods")
		rows := map[string]string{}
		for _, r := range cellsBelowHeader(t, localKubectl.run(t, "get", "pods", "-o", "wide")) {
			rows[r[0]] = strings.Join(r[1:], "|")
		}
		for name, want := range map[string]string{
			"running-ready": "1/1|Running|0|(age)|10.244.0.7|node-1|<none>|<none>",
			"crash-loop":    "0/1|CrashLoopBackOff|4 (10d ago)|(age)|10.244.0.7|node-1|<none>|<none>",
			"terminating":   "1/1|Terminating|0|(age)|10.244.0.7|node-1|<none>|<none>",
			"gated":         "1/1|Running|0|(age)|10.244.0.7|node-1|<none>|1/2",
		} {
			if rows[name] != want {
				t.Errorf("pod %s: row %s, want %s", name, rows[name], want)
			}
		}
	})
	t.Run("events", func(t *testing.T) {
		for _, e := range conformanceEvents() {
			for _, cs := range []kubernetes.Interface{realCS, localCS} {
				if _, err := cs.CoreV1().Events("default").Create(t.Context(), e.DeepCopy(), metav1.CreateOptions{}); err != nil {
					t.Fatalf("event %s: %v", e.Name, err)
				}
			}
		}
		compare(t, map[string]string{"list": "/api/v1/namespaces/default/events"},
			[2]string{"LAST SEEN|TYPE|REASON|OBJECT|MESSAGE", "LAST SEEN|TYPE|REASON|OBJECT|SUBOBJECT|SOURCE|MESSAGE|FIRST SEEN|COUNT|NAME"}, "get", "events")
	})
	t.Run("endpointslices", func(t *testing.T) {
		for _, e := range conformanceSlices() {
			if _, err := realCS.DiscoveryV1().EndpointSlices("default").Create(t.Context(), e.DeepCopy(), metav1.CreateOptions{}); err != nil {
				t.Fatalf("slice %s: %v", e.Name, err)
			}
			if _, err := s.store.EndpointSlices.Create(e.DeepCopy()); err != nil {
				t.Fatal(err)
			}
		}
		compare(t, map[string]string{"list": "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"},
			[2]string{"NAME|ADDRESSTYPE|PORTS|ENDPOINTS|(age)", "NAME|ADDRESSTYPE|PORTS|ENDPOINTS|(age)"}, "get", "endpointslices")
	})
	t.Run("knative services", func(t *testing.T) {
		src, err := knative.FindSources(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		realKubectl.run(t, "apply", "-f", filepath.Join(src.Serving, "config/core/300-resources/service.yaml"))
		realKubectl.run(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/services.serving.knative.dev")
		for _, svc := range conformanceServices() {
			writeService(t, realKubectl, svc)
			if _, err := s.store.Services.Create(svc); err != nil {
				t.Fatal(err)
			}
		}
		compare(t, map[string]string{"list": "/apis/serving.knative.dev/v1/namespaces/default/services"},
			[2]string{"NAME|URL|LATESTCREATED|LATESTREADY|READY|REASON", "NAME|URL|LATESTCREATED|LATESTREADY|READY|REASON"}, "get", "ksvc")
	})
}

// writeService creates a Knative Service on the real API server and
// writes its status through the status subresource, with kubectl.
func writeService(t *testing.T, k kubectlOn, svc *servingv1.Service) {
	t.Helper()
	manifest := filepath.Join(t.TempDir(), svc.Name+".yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: `+svc.Name+`, namespace: default, labels: {conformance: "yes"}}
spec: {template: {spec: {containers: [{image: example.com/app}]}}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	k.run(t, "create", "-f", manifest)
	status, err := json.Marshal(map[string]any{"status": svc.Status})
	if err != nil {
		t.Fatal(err)
	}
	k.run(t, "patch", "ksvc", svc.Name, "--subresource=status", "--type=merge", "-p", string(status))
}

// writePod creates c's pod and then writes its status, as a kubelet
// would; a pod with a finalizer is then deleted, so it shows Terminating.
func writePod(t *testing.T, cs kubernetes.Interface, p *corev1.Pod) {
	t.Helper()
	pods := cs.CoreV1().Pods("default")
	created, err := pods.Create(t.Context(), p.DeepCopy(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pod %s: %v", p.Name, err)
	}
	created.Status = *p.Status.DeepCopy()
	if _, err := pods.UpdateStatus(t.Context(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("pod %s status: %v", p.Name, err)
	}
	if len(p.Finalizers) > 0 {
		if err := pods.Delete(t.Context(), p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("pod %s delete: %v", p.Name, err)
		}
	}
}

// longAgo is far enough back that a relative time ("10d") reads the same
// on both servers however long the test takes.
var longAgo = metav1.NewTime(time.Now().Add(-10 * 24 * time.Hour).Truncate(time.Second))

// conformancePods are the well-known STATUS, READY and RESTARTS cases.
func conformancePods() []*corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	yes, no := true, false
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: longAgo}}
	waiting := func(r string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: r}}
	}
	done := func(reason string, code, signal int32) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code, Signal: signal, StartedAt: longAgo, FinishedAt: longAgo}}
	}
	st := func(name string, ready bool, state corev1.ContainerState, restarts int32) corev1.ContainerStatus {
		s := corev1.ContainerStatus{Name: name, Ready: ready, State: state, RestartCount: restarts, Image: "example.com/app", ImageID: "", Started: &no}
		if state.Running != nil {
			s.Started = &yes
		}
		if restarts > 0 {
			s.LastTerminationState = done("Error", 1, 0)
		}
		return s
	}
	cond := func(t corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: s, LastTransitionTime: longAgo}
	}
	pod := func(name string, phase corev1.PodPhase, ready corev1.ConditionStatus, statuses ...corev1.ContainerStatus) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: conformanceLabels}, Spec: corev1.PodSpec{NodeName: "node-1"}}
		for _, s := range statuses {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: s.Name, Image: "example.com/app"})
		}
		p.Status = corev1.PodStatus{Phase: phase, ContainerStatuses: statuses, PodIP: "10.244.0.7", PodIPs: []corev1.PodIP{{IP: "10.244.0.7"}},
			Conditions: []corev1.PodCondition{cond(corev1.PodReady, ready)}}
		return p
	}
	withInit := func(p *corev1.Pod, statuses ...corev1.ContainerStatus) *corev1.Pod {
		for _, s := range statuses {
			c := corev1.Container{Name: s.Name, Image: "example.com/app"}
			if strings.HasPrefix(s.Name, "sidecar") {
				c.RestartPolicy = &always
			}
			p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		}
		p.Status.InitContainerStatuses = statuses
		return p
	}
	terminating := pod("terminating", corev1.PodRunning, corev1.ConditionTrue, st("app", true, running, 0))
	terminating.Finalizers = []string{"example.com/hold"}
	gated := pod("gated", corev1.PodRunning, corev1.ConditionFalse, st("app", true, running, 0))
	gated.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}
	gated.Status.Conditions = append(gated.Status.Conditions, cond("example.com/lb", corev1.ConditionTrue))
	evicted := pod("evicted", corev1.PodFailed, corev1.ConditionFalse, st("app", false, done("Error", 137, 0), 0))
	evicted.Status.Reason = "Evicted"
	return []*corev1.Pod{
		pod("running-ready", corev1.PodRunning, corev1.ConditionTrue, st("app", true, running, 0)),
		pod("crash-loop", corev1.PodRunning, corev1.ConditionFalse, st("app", false, waiting("CrashLoopBackOff"), 4)),
		pod("not-ready", corev1.PodRunning, corev1.ConditionFalse, st("app", false, running, 0)),
		pod("creating", corev1.PodPending, corev1.ConditionFalse, st("app", false, waiting("ContainerCreating"), 0)),
		pod("completed-ready", corev1.PodRunning, corev1.ConditionTrue, st("job", false, done("Completed", 0, 0), 0), st("app", true, running, 2)),
		pod("completed-not-ready", corev1.PodRunning, corev1.ConditionFalse, st("job", false, done("Completed", 0, 0), 0), st("app", true, running, 0)),
		pod("succeeded", corev1.PodSucceeded, corev1.ConditionFalse, st("app", false, done("Completed", 0, 0), 0)),
		pod("failed", corev1.PodFailed, corev1.ConditionFalse, st("a", false, done("Completed", 0, 0), 0), st("b", false, done("Error", 2, 0), 0)),
		pod("signalled", corev1.PodRunning, corev1.ConditionFalse, st("app", false, done("", 0, 9), 1)),
		withInit(pod("init-waiting", corev1.PodPending, corev1.ConditionFalse, st("app", false, waiting("PodInitializing"), 0)),
			st("init-a", false, waiting("PodInitializing"), 0), st("init-b", false, waiting("PodInitializing"), 0)),
		withInit(pod("init-crash", corev1.PodPending, corev1.ConditionFalse, st("app", false, waiting("PodInitializing"), 0)),
			st("init-a", false, waiting("CrashLoopBackOff"), 3)),
		withInit(pod("with-sidecar", corev1.PodRunning, corev1.ConditionTrue, st("app", true, running, 1)),
			st("init-a", false, done("Completed", 0, 0), 5), st("sidecar-gate", true, running, 2)),
		terminating, gated, evicted,
	}
}

func conformanceEvents() []*corev1.Event {
	ev := func(name, kind, obj string, count int32, first, last metav1.Time) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: name, Labels: conformanceLabels},
			InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: "default", Name: obj, FieldPath: "spec.containers{app}"},
			Reason:         "Unhealthy", Message: "  Readiness probe failed: HTTP probe failed with statuscode: 503\n", Type: corev1.EventTypeWarning,
			Count: count, FirstTimestamp: first, LastTimestamp: last,
			Source: corev1.EventSource{Component: "kubelet", Host: "node-1"},
		}
	}
	older := metav1.NewTime(longAgo.Add(-10 * 24 * time.Hour))
	repeated := ev("repeated", "Pod", "web", 3, older, longAgo)
	noName := ev("no-object-name", "Node", "", 1, longAgo, longAgo)
	noName.InvolvedObject.Namespace, noName.InvolvedObject.FieldPath = "", ""
	noLast := ev("no-last", "Pod", "web", 0, longAgo, metav1.Time{})
	noLast.Source = corev1.EventSource{}
	noLast.ReportingController, noLast.ReportingInstance = "podgate.dev/node", ""
	return []*corev1.Event{ev("single", "Pod", "web", 1, longAgo, longAgo), repeated, noName, noLast}
}

func conformanceSlices() []*discoveryv1.EndpointSlice {
	port := func(n int32) discoveryv1.EndpointPort {
		name := fmt.Sprintf("p%d", n)
		return discoveryv1.EndpointPort{Name: &name, Port: &n}
	}
	named, proto := "http", corev1.ProtocolTCP
	slice := func(name string, ports []discoveryv1.EndpointPort, addrs ...[]string) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: conformanceLabels}, AddressType: discoveryv1.AddressTypeIPv4, Ports: ports}
		for _, a := range addrs {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: a})
		}
		return s
	}
	many := []discoveryv1.EndpointPort{{Name: &named, Protocol: &proto}, port(1), port(2), port(3), port(4)}
	return []*discoveryv1.EndpointSlice{
		slice("empty", nil),
		slice("two", []discoveryv1.EndpointPort{port(8012), port(8022)}, []string{"10.244.0.1"}, []string{"10.244.0.2"}),
		slice("many", many, []string{"10.244.0.1"}, []string{"10.244.0.2"}, []string{"10.244.0.3"}, []string{"10.244.0.4"}),
	}
}

func conformanceServices() []*servingv1.Service {
	svc := func(name string, ready corev1.ConditionStatus, reason string) *servingv1.Service {
		s := &servingv1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: conformanceLabels}}
		if ready == "" {
			return s
		}
		s.Status.URL = "http://" + name + ".default.example.com"
		s.Status.LatestCreatedRevisionName = name + "-00001"
		if ready == corev1.ConditionTrue {
			s.Status.LatestReadyRevisionName = name + "-00001"
		}
		s.Status.Conditions = []servingv1.Condition{{Type: "ConfigurationsReady", Status: corev1.ConditionTrue}, {Type: "Ready", Status: ready, Reason: reason}}
		return s
	}
	return []*servingv1.Service{svc("hello", corev1.ConditionTrue, ""), svc("broken", corev1.ConditionFalse, "RevisionMissing"), svc("fresh", "", "")}
}

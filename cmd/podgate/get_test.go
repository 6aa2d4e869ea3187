package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/podgate/podgate/local/apiserver"
	"github.com/podgate/podgate/local/objstore"
	"github.com/podgate/podgate/local/servingv1"
	"github.com/podgate/podgate/test/syncbuf"
)

// --- helpers shared by get, delete and logs tests ---

// noLeaks checks, after the test and its cleanups, that the test left no
// goroutines behind (the package has no TestMain of its own).
func noLeaks(t *testing.T) {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

// apiServer is a real control API on 127.0.0.1:0 over a real store.
type apiServer struct {
	addr  string
	store *objstore.Store
	stop  func()
}

func startAPI(t *testing.T, cfg apiserver.Config) *apiServer {
	t.Helper()
	if cfg.Store == nil {
		cfg.Store = objstore.New(objstore.Options{})
	}
	ln, err := apiserver.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- apiserver.NewServer(cfg).Serve(ctx, ln) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return &apiServer{addr: ln.Addr().String(), store: cfg.Store, stop: stop}
}

// cli runs podgate in-process and returns the exit code and outputs.
func cli(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// background runs a long-lived command (-w, -f) whose output the test
// polls; wait returns its exit code.
type background struct {
	out, err syncbuf.Buffer
	done     chan int
}

func startCLI(args ...string) *background {
	b := &background{done: make(chan int, 1)}
	go func() { b.done <- run(args, &b.out, &b.err) }()
	return b
}

// waitFor polls the command's output until it contains want. The deadline
// is generous: it only turns a hang into a failure.
func (b *background) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(b.out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("output never contained %q:\n%s\nstderr:\n%s", want, b.out.String(), b.err.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (b *background) wait(t *testing.T) int {
	t.Helper()
	select {
	case code := <-b.done:
		return code
	case <-time.After(10 * time.Second):
		t.Fatalf("command did not end:\n%s", b.out.String())
	}
	return -1
}

func seedStore(t *testing.T, s *objstore.Store) {
	t.Helper()
	mk := func(ns, name string, app string, phase corev1.PodPhase, ready bool) {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
			Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{
				Name: "app", Ready: ready, Started: &ready,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Now().Add(-time.Hour))}},
			}}},
		}
		// Far enough in the past that AGE cannot tick over during the test.
		p.CreationTimestamp = metav1.NewTime(time.Now().Add(-10 * time.Hour))
		p.Status.PodIP = "127.0.1.9"
		p.Spec.NodeName = "podgate"
		if _, err := s.Pods.Create(p); err != nil {
			t.Fatal(err)
		}
	}
	mk("default", "hello-1", "hello", corev1.PodRunning, true)
	mk("default", "db-0", "db", corev1.PodRunning, false)
	mk("prod", "api-0", "api", corev1.PodRunning, true)
	old := metav1.NewTime(time.Now().Add(-20 * time.Hour))
	for _, e := range []*corev1.Event{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello-1.b"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "hello-1"},
			Type: "Warning", Reason: "Unhealthy", Message: "Readiness probe failed", Count: 4, FirstTimestamp: old, LastTimestamp: metav1.NewTime(time.Now().Add(-11 * time.Hour))},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello-1.a"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "hello-1"},
			Type: "Normal", Reason: "Started", Message: "Started container app", Count: 1, FirstTimestamp: old, LastTimestamp: old},
	} {
		if _, err := s.Events.Create(e); err != nil {
			t.Fatal(err)
		}
	}
	port := int32(8012)
	if _, err := s.EndpointSlices.Create(&discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello-x7k2p", CreationTimestamp: metav1.NewTime(time.Now().Add(-10 * time.Hour))}, AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{{Port: &port}}, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"127.0.1.9"}}},
	}); err != nil {
		t.Fatal(err)
	}
	svc := &servingv1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello"}}
	svc.Status.URL = "http://hello.default.example.com"
	svc.Status.LatestCreatedRevisionName, svc.Status.LatestReadyRevisionName = "hello-00001", "hello-00001"
	svc.Status.Conditions = []servingv1.Condition{{Type: "ConfigurationsReady", Status: corev1.ConditionTrue}, {Type: "Ready", Status: corev1.ConditionTrue}}
	if _, err := s.Services.Create(svc); err != nil {
		t.Fatal(err)
	}
}

func TestGetPrintsKubectlTablesFromTheAPI(t *testing.T) {
	noLeaks(t)
	srv := startAPI(t, apiserver.Config{})
	seedStore(t, srv.store)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"pods in the default namespace", []string{"get", "pods"}, "" +
			"NAME      READY   STATUS    RESTARTS   AGE\n" +
			"db-0      0/1     Running   0          10h\n" +
			"hello-1   1/1     Running   0          10h\n"},
		{"wide pods", []string{"get", "po", "-o", "wide"}, "" +
			"NAME      READY   STATUS    RESTARTS   AGE   IP          NODE      NOMINATED NODE   READINESS GATES\n" +
			"db-0      0/1     Running   0          10h   127.0.1.9   podgate   <none>           <none>\n" +
			"hello-1   1/1     Running   0          10h   127.0.1.9   podgate   <none>           <none>\n"},
		{"all namespaces add a NAMESPACE column", []string{"get", "pods", "-A", "--no-headers"}, "" +
			"default   db-0      0/1   Running   0     10h\n" +
			"default   hello-1   1/1   Running   0     10h\n" +
			"prod      api-0     1/1   Running   0     10h\n"},
		{"another namespace", []string{"get", "pods", "-n", "prod", "-o", "name"}, "pod/api-0\n"},
		{"a label selector", []string{"get", "pods", "-l", "app=hello", "-o", "name"}, "pod/hello-1\n"},
		{"a field selector", []string{"get", "pods", "--field-selector", "metadata.name=db-0", "-o", "name"}, "pod/db-0\n"},
		{"one pod by name", []string{"get", "pod", "hello-1"}, "" +
			"NAME      READY   STATUS    RESTARTS   AGE\n" +
			"hello-1   1/1     Running   0          10h\n"},
		{"events sorted by last seen, repeats folded", []string{"get", "events"}, "" +
			"LAST SEEN           TYPE      REASON      OBJECT        MESSAGE\n" +
			"20h                 Normal    Started     Pod/hello-1   Started container app\n" +
			"11h (x4 over 20h)   Warning   Unhealthy   Pod/hello-1   Readiness probe failed\n"},
		{"endpoints are EndpointSlices", []string{"get", "endpoints"}, "" +
			"NAME          ADDRESSTYPE   PORTS   ENDPOINTS   AGE\n" +
			"hello-x7k2p   IPv4          8012    127.0.1.9   10h\n"},
		{"knative services as kubectl get ksvc", []string{"get", "ksvc"}, "" +
			"NAME    URL                                LATESTCREATED   LATESTREADY   READY   REASON\n" +
			"hello   http://hello.default.example.com   hello-00001     hello-00001   True    \n"},
		{"-o name for every kind", []string{"get", "endpointslices", "-o", "name"}, "endpointslice.discovery.k8s.io/hello-x7k2p\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := cli(append(tt.args, "--api", srv.addr)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errOut)
			}
			if out != tt.want {
				t.Errorf("output:\n%s\nwant:\n%s", out, tt.want)
			}
		})
	}
}

func TestGetJSONAndYAMLPrintTheListAsServed(t *testing.T) {
	noLeaks(t)
	srv := startAPI(t, apiserver.Config{})
	seedStore(t, srv.store)

	code, out, errOut := cli("get", "pods", "-o", "json", "--api", srv.addr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var l corev1.PodList
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("not a PodList: %v\n%s", err, out)
	}
	if l.Kind != "PodList" || l.APIVersion != "v1" || l.ResourceVersion == "" || len(l.Items) != 2 || l.Items[0].Kind != "Pod" || l.Items[0].APIVersion != "v1" {
		t.Errorf("list %s %s rv %q, %d items, first kind %q", l.APIVersion, l.Kind, l.ResourceVersion, len(l.Items), l.Items[0].Kind)
	}
	if !strings.HasPrefix(out, "{\n    \"kind\": \"PodList\",\n    \"apiVersion\": \"v1\",\n") {
		t.Errorf("JSON is not indented like kubectl's (four spaces):\n%.120s", out)
	}

	code, out, _ = cli("get", "ksvc", "-o", "yaml", "--api", srv.addr)
	var sl servingv1.ServiceList
	if err := yaml.Unmarshal([]byte(out), &sl); code != 0 || err != nil {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	if sl.Kind != "ServiceList" || len(sl.Items) != 1 || sl.Items[0].Status.URL != "http://hello.default.example.com" {
		t.Errorf("yaml list: %+v", sl)
	}

	code, out, _ = cli("get", "pod", "hello-1", "-o", "yaml", "--api", srv.addr)
	var p corev1.Pod
	if err := yaml.Unmarshal([]byte(out), &p); code != 0 || err != nil || p.Kind != "Pod" || p.Name != "hello-1" {
		t.Errorf("one pod as YAML: exit %d, %v: %s", code, err, out)
	}
}

func TestGetErrors(t *testing.T) {
	noLeaks(t)
	srv := startAPI(t, apiserver.Config{})
	seedStore(t, srv.store)
	down := closedAddr(t)

	tests := []struct {
		name      string
		args      []string
		code      int
		stdout    string
		stderr    string
		wantEmpty bool
	}{
		{"podgate not running is exit 1 with a hint", []string{"get", "pods", "--api", down}, 1, "",
			"Error: cannot reach podgate at " + down + ": is 'podgate run' running?\n", false},
		{"a missing pod is exit 1 NotFound", []string{"get", "pods", "nope", "--api", srv.addr}, 1, "", "Error: pods \"nope\" not found\n", false},
		{"found pods print, missing ones fail", []string{"get", "pods", "db-0", "nope", "-o", "name", "--api", srv.addr}, 1, "pod/db-0\n", "Error: pods \"nope\" not found\n", false},
		{"an empty namespace says so, exit 0", []string{"get", "pods", "-n", "empty", "--api", srv.addr}, 0, "", "No resources found in empty namespace.\n", false},
		{"a bad selector is the server's 400, exit 1", []string{"get", "pods", "--field-selector", "spec.foo=1", "--api", srv.addr}, 1, "", "Error: field label not supported: spec.foo\n", false},
		{"no resource type is a usage error", []string{"get"}, 2, "", "Error: you must specify the type of resource to get: pods, events, endpoints, services\n", false},
		{"an unknown type is a usage error", []string{"get", "nodes"}, 2, "", `Error: the server doesn't have a resource type "nodes" (podgate serves pods, events, endpoints, services)` + "\n", false},
		{"an unknown output is a usage error", []string{"get", "pods", "-o", "table"}, 2, "", "Error: -o \"table\": must be wide, json, yaml or name\n", false},
		{"a name with a selector is a usage error", []string{"get", "pods", "x", "-l", "a=b"}, 2, "", "Error: name cannot be provided when a selector is specified\n", false},
		{"watching two names is a usage error", []string{"get", "pods", "a", "b", "-w"}, 2, "", "Error: watch is only supported on one resource or on a whole collection, not on 2 names\n", false},
		{"a bad --api is a usage error", []string{"get", "pods", "--api", "https://127.0.0.1:1"}, 2, "", "Error: --api: control API address", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := cli(tt.args...)
			if code != tt.code || out != tt.stdout || !strings.HasPrefix(errOut, tt.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q, stderr %q", code, out, errOut, tt.code, tt.stdout, tt.stderr)
			}
		})
	}
}

func TestGetWatchPrintsARowForEveryChange(t *testing.T) {
	noLeaks(t)
	srv := startAPI(t, apiserver.Config{})
	seedStore(t, srv.store)
	w := startCLI("get", "pods", "-w", "--api", srv.addr)
	w.waitFor(t, "hello-1   1/1     Running   0          10h\n")

	srv.store.Pods.Modify("default", "db-0", func(p *corev1.Pod) error {
		cs := &p.Status.ContainerStatuses[0]
		cs.Ready, cs.RestartCount = false, 1
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 1, Reason: "Error", FinishedAt: metav1.NewTime(time.Now().Add(-2 * time.Hour))}}
		return nil
	})
	w.waitFor(t, "db-0      0/1     CrashLoopBackOff   1 (120m ago)   10h\n")
	srv.store.Pods.Modify("prod", "api-0", func(p *corev1.Pod) error { p.Labels["x"] = "y"; return nil })
	ts := metav1.Now()
	srv.store.Pods.Modify("default", "hello-1", func(p *corev1.Pod) error { p.DeletionTimestamp = &ts; return nil })
	w.waitFor(t, "hello-1   1/1     Terminating        0              10h\n")

	srv.stop() // podgate run stops: the watch ends quietly, as kubectl's does
	if code := w.wait(t); code != 0 {
		t.Errorf("exit %d: %s", code, w.err.String())
	}
	out := w.out.String()
	if strings.Count(out, "NAME") != 1 || strings.Contains(out, "api-0") {
		t.Errorf("one header and only the default namespace, got:\n%s", out)
	}
}

func TestGetWatchOfOneNameFollowsThatObject(t *testing.T) {
	noLeaks(t)
	srv := startAPI(t, apiserver.Config{})
	seedStore(t, srv.store)
	w := startCLI("get", "pods", "hello-1", "-w", "-o", "name", "--api", srv.addr)
	w.waitFor(t, "pod/hello-1\n")
	srv.store.Pods.Modify("default", "db-0", func(p *corev1.Pod) error { p.Labels["x"] = "1"; return nil })
	srv.store.Pods.Modify("default", "hello-1", func(p *corev1.Pod) error { p.Labels["x"] = "1"; return nil })
	w.waitFor(t, "pod/hello-1\npod/hello-1\n")
	srv.stop()
	w.wait(t)
	if out := w.out.String(); out != "pod/hello-1\npod/hello-1\n" {
		t.Errorf("output %q", out)
	}
}

func TestGetWatchOfAnEmptyListPrintsTheHeaderWithTheFirstRow(t *testing.T) {
	noLeaks(t)
	srv := startAPI(t, apiserver.Config{})
	w := startCLI("get", "events", "-w", "--api", srv.addr)
	// Nothing to wait for yet: an empty list prints nothing, not even
	// "No resources found" (kubectl prints it; under -w it would be noise).
	// The event comes once the watch is open: made earlier, the list
	// would print it, and the stop below could come before the watch
	// was asked for, which is a control API that cannot be reached.
	deadline := time.Now().Add(30 * time.Second)
	for srv.store.Events.Watchers() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("podgate get -w opened no watch of events within 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	threeHours := metav1.NewTime(time.Now().Add(-3 * time.Hour))
	e := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: "web.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web", FieldPath: "spec.containers{app}"},
		Reason:         "Started", Message: "Started container app", Type: "Warning", Count: 1,
		FirstTimestamp: threeHours, LastTimestamp: threeHours,
	}
	if _, err := srv.store.Events.Create(e); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, "LAST SEEN   TYPE      REASON    OBJECT    MESSAGE\n3h          Warning   Started   Pod/web   Started container app\n")
	srv.stop()
	if code := w.wait(t); code != 0 || w.err.String() != "" {
		t.Errorf("exit %d stderr %q", code, w.err.String())
	}
}

// closedAddr is a loopback address nothing listens on any more: a control
// API that is down.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

package kubewatch_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/kube/controlplane"
	"github.com/podgate/podgate/node/kube"
	"github.com/podgate/podgate/node/proc"
	"github.com/podgate/podgate/record"
	"github.com/podgate/podgate/record/kubewatch"
)

func TestMain(m *testing.M) {
	// Before anything else: the guardian of the Supervisors these tests
	// start is this test binary, re-executed.
	proc.RunReaperIfAsked()
	goleak.VerifyTestMain(m)
}

const (
	ns       = "rec"
	nodeName = "node-rec"
	// podCIDR is this package's own range, so its tests run beside
	// `podgate run` and the other packages' tests.
	podCIDR = "127.3.60.0/24"
	// Addresses of the test's own EndpointSlice: documentation addresses
	// (TEST-NET-1), stored in an object and never dialled. The API server
	// refuses loopback ones in EndpointSlices.
	addrA, addrB = "192.0.2.10", "192.0.2.11"
	patience     = 2 * time.Minute
)

// facts is a record.Log with waits for the test.
type facts struct {
	t   *testing.T
	log *record.Log
}

// wait returns the first fact that matches, waiting for it.
func (f facts) wait(what string, match func(record.Fact) bool) record.Fact {
	f.t.Helper()
	deadline := time.Now().Add(patience)
	for {
		all, _, changed := f.log.Since(0)
		for _, x := range all {
			if match(x) {
				return x
			}
		}
		select {
		case <-changed:
		case <-time.After(time.Until(deadline)):
			f.t.Fatalf("no fact %s within %s; facts:\n%s", what, patience, dump(all))
		}
	}
}

func (f facts) all() []record.Fact {
	all, _, _ := f.log.Since(0)
	return all
}

func dump(fs []record.Fact) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s %s %s/%s %s %+v%+v%+v%+v%+v%+v%+v\n", f.Time.Format("15:04:05.000"), f.Kind, f.Pod, f.Container,
			f.Namespace, f.State, f.Condition, f.Event, f.Endpoint, f.Gate, f.Probe, f.Route)
	}
	return b.String()
}

// cluster is a real control plane and a podgate node, namespace rec.
func cluster(t *testing.T) (kubernetes.Interface, *controlplane.ControlPlane) {
	t.Helper()
	cp, err := controlplane.Start(t.Context(), controlplane.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	cs := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := cp.NodeKubeconfig(nodeName)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	var log strings.Builder
	logger := slog.New(slog.NewTextHandler(&lockedBuilder{b: &log}, nil))
	go func() {
		done <- kube.Run(ctx, kube.Config{
			Kubeconfig: kubeconfig, NodeName: nodeName, PodCIDR: podCIDR, PodsDir: t.TempDir(),
			Logger: logger, Ready: func() { close(ready) }, Signals: make(chan os.Signal),
		})
	}()
	// Registered after the control plane's: runs first.
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("node: %v", err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("node: %v", err)
	case <-time.After(patience):
		t.Fatal("the node was not ready in time")
	}
	return cs, cp
}

// TestAPodItsEventsAndAnEndpointSliceOnAKubeAPIServer runs a pod on a
// podgate node of a real control plane and watches namespace rec: the
// pod's container states and conditions, the kubelet's events (an
// Unhealthy one also as a probe fact), an event's count growing, and an
// EndpointSlice's endpoints appearing, changing and leaving. An event
// from before the watch is not a fact of the recording; a change made
// just before Stop is.
func TestAPodItsEventsAndAnEndpointSliceOnAKubeAPIServer(t *testing.T) {
	cs, cp := cluster(t)
	ctx := t.Context()
	t.Run("an identity that may not list pods is refused at once", func(t *testing.T) {
		// A node's credential: the Node authorizer lets it list only the
		// pods bound to it.
		kubeconfig, err := cp.NodeKubeconfig(nodeName)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		_, err = kubewatch.Start(ctx, kubewatch.Config{Client: kubernetes.NewForConfigOrDie(rc), Namespace: ns, Sink: record.Discard})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "kubewatch: listing pods in namespace rec: ") {
			t.Errorf("Start as a node: %v, want Forbidden naming the pods of namespace rec", err)
		}
	})
	before := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "before", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web"},
		Reason:         "Before", Message: "history", Type: corev1.EventTypeNormal, Count: 1,
	}
	if _, err := cs.CoreV1().Events(ns).Create(ctx, before, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	log := record.NewLog(100000)
	f := facts{t: t, log: log}
	w, err := kubewatch.Start(ctx, kubewatch.Config{Client: cs, Namespace: ns, Sink: log, ProbesFromEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = w.Stop(context.Background())
		}
	})

	readyFile := filepath.Join(t.TempDir(), "ready")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:                      nodeName,
			TerminationGracePeriodSeconds: ptr.To[int64](2),
			ReadinessGates:                []corev1.PodReadinessGate{{ConditionType: contract.ContainersReadyCondition}},
			Containers: []corev1.Container{{
				Name: "app", Image: "busybox",
				Command: []string{"/bin/sh", "-c", "trap 'exit 0' TERM; sleep 600 & wait"},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", readyFile}}},
					PeriodSeconds: 1, FailureThreshold: 1,
				},
			}},
		},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Run("container states, events and the probe failures they report", func(t *testing.T) {
		f.wait("app running", func(x record.Fact) bool {
			return x.Kind == record.KindContainer && x.Pod == "web" && x.Container == "app" && x.State.State == "running" && !x.State.Ready
		})
		f.wait("Started event", func(x record.Fact) bool {
			return x.Kind == record.KindEvent && x.Pod == "web" && x.Container == "app" && x.Event.Reason == "Started" && x.Event.Object == "Pod/web"
		})
		unhealthy := f.wait("Unhealthy event", func(x record.Fact) bool {
			return x.Kind == record.KindEvent && x.Container == "app" && x.Event.Reason == "Unhealthy" && x.Event.Type == corev1.EventTypeWarning
		})
		probe := f.wait("probe fact", func(x record.Fact) bool { return x.Kind == record.KindProbe && x.Container == "app" })
		if p := probe.Probe; p.Probe != "readiness" || p.Result != "failure" || !strings.Contains(p.Message, readyFile) || !probe.Time.Equal(unhealthy.Time) {
			t.Errorf("probe fact %+v at %v, want the readiness failure of the Unhealthy event at %v (%q)", p, probe.Time, unhealthy.Time, unhealthy.Event.Message)
		}
	})
	t.Run("conditions change and the gate's condition is its verdict", func(t *testing.T) {
		f.wait("Ready False", func(x record.Fact) bool {
			return x.Kind == record.KindCondition && x.Pod == "web" && x.Condition.Type == "Ready" && x.Condition.Status == "False"
		})
		if err := os.WriteFile(readyFile, []byte("ok"), 0o644); err != nil {
			t.Fatal(err)
		}
		f.wait("app ready", func(x record.Fact) bool {
			return x.Kind == record.KindContainer && x.Container == "app" && x.State.Ready && x.State.Started != nil && *x.State.Started
		})
		f.wait("ContainersReady True", func(x record.Fact) bool {
			return x.Kind == record.KindCondition && x.Condition.Type == "ContainersReady" && x.Condition.Status == "True"
		})
		// The gate's condition, as the gate writes it.
		patch := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":"True","lastTransitionTime":%q}]}}`, contract.ContainersReadyCondition, time.Now().UTC().Format(time.RFC3339))
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, "web", "application/strategic-merge-patch+json", []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
		f.wait("gate ready", func(x record.Fact) bool { return x.Kind == record.KindGate && x.Pod == "web" && x.Gate.Ready })
		f.wait("Ready True", func(x record.Fact) bool {
			return x.Kind == record.KindCondition && x.Condition.Type == "Ready" && x.Condition.Status == "True"
		})
	})
	t.Run("an event's count growing is a fact each time", func(t *testing.T) {
		e := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "grows", Namespace: ns},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web", FieldPath: "spec.containers{app}"},
			Reason:         "Grows", Message: "again", Type: corev1.EventTypeNormal, Count: 1,
		}
		e, err := cs.CoreV1().Events(ns).Create(ctx, e, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f.wait("Grows ×1", func(x record.Fact) bool {
			return x.Kind == record.KindEvent && x.Event.Reason == "Grows" && x.Event.Count == 1
		})
		e.Count = 2
		if _, err := cs.CoreV1().Events(ns).Update(ctx, e, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.wait("Grows ×2", func(x record.Fact) bool {
			return x.Kind == record.KindEvent && x.Event.Reason == "Grows" && x.Event.Count == 2
		})
	})
	t.Run("endpoints appear, change and leave", func(t *testing.T) {
		slices := cs.DiscoveryV1().EndpointSlices(ns)
		s, err := slices.Create(ctx, slice("web-x", endpoint(addrA, false)), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		isEndpoint := func(addr string, ready, removed bool) func(record.Fact) bool {
			return func(x record.Fact) bool {
				e := x.Endpoint
				return x.Kind == record.KindEndpoint && e.Address == addr && e.Removed == removed && e.Service == "web" && e.Slice == "web-x" &&
					x.Pod == "web" && x.Namespace == ns && (removed || (e.Ready != nil && *e.Ready == ready))
			}
		}
		f.wait("A not ready", isEndpoint(addrA, false, false))
		s.Endpoints = []discoveryv1.Endpoint{endpoint(addrA, true), endpoint(addrB, true)}
		if s, err = slices.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.wait("A ready", isEndpoint(addrA, true, false))
		f.wait("B ready", isEndpoint(addrB, true, false))
		s.Endpoints = s.Endpoints[:1]
		if _, err = slices.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.wait("B removed", isEndpoint(addrB, false, true))
		if err := slices.Delete(ctx, "web-x", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		f.wait("A removed with its slice", isEndpoint(addrA, false, true))
	})
	t.Run("a change just before Stop is in; history from before Start is not", func(t *testing.T) {
		if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice("web-last", endpoint(addrB, true)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		stopped = true
		if err := w.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		n := len(f.all())
		last := false
		for _, x := range f.all() {
			if x.Kind == record.KindEndpoint && x.Endpoint.Slice == "web-last" && x.Endpoint.Address == addrB {
				last = true
			}
			if x.Kind == record.KindEvent && x.Event.Reason == "Before" {
				t.Errorf("the event from before the watch is a fact: %+v", x.Event)
			}
		}
		if !last {
			t.Errorf("the endpoint created just before Stop is not in the recording:\n%s", dump(f.all()))
		}
		if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice("web-after", endpoint(addrA, true)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := len(f.all()); got != n {
			t.Errorf("%d facts after Stop", got-n)
		}
	})
	if t.Failed() {
		t.Logf("facts:\n%s", dump(f.all()))
	}
}

func slice(name string, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
			discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "kubewatch-test",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   eps,
	}
}

func endpoint(addr string, ready bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{
		Addresses:  []string{addr},
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(ready), Terminating: ptr.To(false)},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web"},
	}
}

// lockedBuilder is the node's log, written from several goroutines.
type lockedBuilder struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

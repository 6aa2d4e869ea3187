package kubebackends

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/local/apiserver"
	"github.com/podgate/podgate/local/objstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const ns = "default"

// startAPI serves store through a real control API on 127.0.0.1:0 and
// returns a real client-go clientset on it.
func startAPI(t *testing.T, store *objstore.Store) kubernetes.Interface {
	t.Helper()
	ln, err := apiserver.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- apiserver.NewServer(apiserver.Config{Store: store}).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("control API: %v", err)
		}
	})
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "http://" + ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

var execProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/ready"}}}}

func pod(name string, sidecarProbe *corev1.Probe) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: "i"},
			{Name: "side", Image: "i", ReadinessProbe: sidecarProbe},
			{Name: contract.GateContainerName, Image: "g"}, // injected, no ports declared
		}},
	}
}

type ep struct {
	pod, ip            string
	ready, terminating bool
}

func slice(name, service string, eps ...ep) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{ServiceNameLabel: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for _, e := range eps {
		ready, serving, term := e.ready, e.ready, e.terminating
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{e.ip},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &term},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: e.pod},
		})
	}
	return s
}

func put[T objstore.Object](t *testing.T, c *objstore.Collection[T], obj T) {
	t.Helper()
	if _, err := c.Put(obj); err != nil {
		t.Fatal(err)
	}
}

// until reads snapshots until one equals want.
func until(t *testing.T, ch <-chan []activator.Pod, want []activator.Pod) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	var last []activator.Pod
	for {
		select {
		case got, ok := <-ch:
			if !ok {
				t.Fatalf("channel closed; last %+v, want %+v", last, want)
			}
			if reflect.DeepEqual(got, want) {
				return
			}
			last = got
		case <-deadline:
			t.Fatalf("last snapshot %+v, want %+v", last, want)
		}
	}
}

func TestSnapshots(t *testing.T) {
	store := objstore.New(objstore.Options{})
	put(t, store.Pods, pod("web-a", nil))
	put(t, store.Pods, pod("web-b", execProbe))
	put(t, store.EndpointSlices, slice("web-1", "web",
		ep{pod: "web-a", ip: "127.0.1.1", ready: true},
		ep{pod: "web-b", ip: "127.0.1.2"}))
	put(t, store.EndpointSlices, slice("other-1", "other", ep{pod: "x", ip: "127.0.1.9", ready: true}))

	ctx, cancel := context.WithCancel(context.Background())
	src := startFeed(t, store, Options{Namespace: ns, OnlyRouter: true}).Backends(ns, "web", 0)
	ch := src.Pods(ctx)

	t.Run("first snapshot: addresses on the gate port, fast path from each pod's spec", func(t *testing.T) {
		got := <-ch
		want := []activator.Pod{
			{Name: "web-a", Addr: "127.0.1.1:8012", Ready: true, FastPath: true},
			{Name: "web-b", Addr: "127.0.1.2:8012", FastPath: false}, // sidecar exec readiness
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v\nwant %+v", got, want)
		}
	})
	t.Run("endpoint turns ready", func(t *testing.T) {
		put(t, store.EndpointSlices, slice("web-1", "web",
			ep{pod: "web-a", ip: "127.0.1.1", ready: true},
			ep{pod: "web-b", ip: "127.0.1.2", ready: true}))
		until(t, ch, []activator.Pod{
			{Name: "web-a", Addr: "127.0.1.1:8012", Ready: true, FastPath: true},
			{Name: "web-b", Addr: "127.0.1.2:8012", Ready: true},
		})
	})
	t.Run("terminating endpoint and deleting pod", func(t *testing.T) {
		p := pod("web-a", nil)
		now := metav1.Now()
		p.DeletionTimestamp = &now
		put(t, store.Pods, p)
		put(t, store.EndpointSlices, slice("web-1", "web",
			ep{pod: "web-a", ip: "127.0.1.1", terminating: true},
			ep{pod: "web-b", ip: "127.0.1.2", ready: true}))
		until(t, ch, []activator.Pod{
			{Name: "web-a", Addr: "127.0.1.1:8012", Terminating: true},
			{Name: "web-b", Addr: "127.0.1.2:8012", Ready: true},
		})
	})
	t.Run("slice deleted: no pods", func(t *testing.T) {
		if _, err := store.EndpointSlices.Delete(ns, "web-1"); err != nil {
			t.Fatal(err)
		}
		until(t, ch, []activator.Pod{})
	})
	t.Run("closed when the context ends", func(t *testing.T) {
		cancel()
		for range ch {
		}
	})
}

// A reader that falls behind is not sent every intermediate state, and
// ends at the latest one.
func TestSlowReaderGetsLatest(t *testing.T) {
	store := objstore.New(objstore.Options{WatchBuffer: 2})
	put(t, store.Pods, pod("web-a", nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := startFeed(t, store, Options{Namespace: ns, OnlyRouter: true}).Backends(ns, "web", 0).Pods(ctx)
	until(t, ch, []activator.Pod{})
	for i := 0; i < 50; i++ {
		put(t, store.EndpointSlices, slice("web-1", "web", ep{pod: "web-a", ip: "127.0.1.1", ready: i%2 == 0}))
	}
	put(t, store.EndpointSlices, slice("web-1", "web", ep{pod: "web-a", ip: "127.0.1.1", ready: true}))
	until(t, ch, []activator.Pod{{Name: "web-a", Addr: "127.0.1.1:8012", Ready: true, FastPath: true}})
	cancel()
	for range ch {
	}
}

// A compaction ends the informers' watches with 410 Expired: they list
// again, and a change made meanwhile still reaches the reader.
func TestRelistAfterExpired(t *testing.T) {
	store := objstore.New(objstore.Options{})
	put(t, store.Pods, pod("web-a", nil))
	put(t, store.EndpointSlices, slice("web-1", "web", ep{pod: "web-a", ip: "127.0.1.1"}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := startFeed(t, store, Options{Namespace: ns, OnlyRouter: true}).Backends(ns, "web", 0).Pods(ctx)
	until(t, ch, []activator.Pod{{Name: "web-a", Addr: "127.0.1.1:8012", FastPath: true}})
	store.Compact()
	put(t, store.EndpointSlices, slice("web-1", "web", ep{pod: "web-a", ip: "127.0.1.1", ready: true}))
	until(t, ch, []activator.Pod{{Name: "web-a", Addr: "127.0.1.1:8012", Ready: true, FastPath: true}})
	cancel()
	for range ch {
	}
}

// The source drives a real target: a request held while the endpoint is
// not ready goes through once the store says it is.
func TestFeedFeedsTarget(t *testing.T) {
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "queue") // health check and traffic alike
	}))
	defer gate.Close()
	host, port, _ := strings.Cut(strings.TrimPrefix(gate.URL, "http://"), ":")
	portN, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		t.Fatal(err)
	}

	store := objstore.New(objstore.Options{})
	put(t, store.Pods, pod("web-b", execProbe)) // fast path off: wait for the endpoint
	put(t, store.EndpointSlices, slice("web-1", "web", ep{pod: "web-b", ip: host}))

	target, err := activator.NewTarget("default/web", activator.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	feed := startFeed(t, store, Options{Namespace: ns, OnlyRouter: true})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		target.Run(ctx, feed.Backends(ns, "web", int32(portN)))
	}()
	defer func() { cancel(); <-done }()

	front := httptest.NewServer(target)
	defer front.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resCh := make(chan int, 1)
	go func() {
		resp, err := (&http.Client{Transport: tr}).Get(front.URL)
		if err != nil {
			resCh <- 0
			return
		}
		resp.Body.Close()
		resCh <- resp.StatusCode
	}()
	deadline := time.Now().Add(10 * time.Second)
	for target.Status().Queued != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("request not held: %+v", target.Status())
		}
		time.Sleep(time.Millisecond)
	}
	put(t, store.EndpointSlices, slice("web-1", "web", ep{pod: "web-b", ip: host, ready: true}))
	select {
	case code := <-resCh:
		if code != http.StatusOK {
			t.Fatalf("got %d, want 200", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("held request not released")
	}
}

// TestGateAdminAddress: a pod whose gate declares its admin port (as a
// native sidecar or a regular container) gets that address, so the
// target can tell the gate when it sends it nothing any more; the gate's
// own startup probe does not close the fast path.
func TestGateAdminAddress(t *testing.T) {
	gate := corev1.Container{
		Name: "podgate", Image: "g",
		Ports: []corev1.ContainerPort{
			{Name: "queue-port", ContainerPort: 8012},
			{Name: "queueadm-port", ContainerPort: 8022},
		},
		StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"podgate", "gate", "wait"}}}},
	}
	always := corev1.ContainerRestartPolicyAlways
	native := pod("web-a", nil)
	sidecar := gate
	sidecar.RestartPolicy = &always
	native.Spec.InitContainers = []corev1.Container{sidecar}
	native.Spec.Containers = native.Spec.Containers[:2] // the gate is the init container
	regular := pod("web-b", nil)
	regular.Spec.Containers = append([]corev1.Container{gate}, regular.Spec.Containers[:2]...)

	store := objstore.New(objstore.Options{})
	put(t, store.Pods, native)
	put(t, store.Pods, regular)
	put(t, store.Pods, pod("web-c", nil))
	put(t, store.EndpointSlices, slice("web-1", "web",
		ep{pod: "web-a", ip: "127.0.1.1", ready: true},
		ep{pod: "web-b", ip: "127.0.1.2", ready: true},
		ep{pod: "web-c", ip: "127.0.1.3", ready: true}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := startFeed(t, store, Options{Namespace: ns, OnlyRouter: true}).Backends(ns, "web", 0).Pods(ctx)
	until(t, ch, []activator.Pod{
		{Name: "web-a", Addr: "127.0.1.1:8012", Ready: true, FastPath: true, AdminAddr: "127.0.1.1:8022"},
		{Name: "web-b", Addr: "127.0.1.2:8012", Ready: true, FastPath: true, AdminAddr: "127.0.1.2:8022"},
		{Name: "web-c", Addr: "127.0.1.3:8012", Ready: true, FastPath: true},
	})
	// Not the only router (a cluster's activator): no gate is told.
	shared := startFeed(t, store, Options{Namespace: ns}).Backends(ns, "web", 0).Pods(ctx)
	until(t, shared, []activator.Pod{
		{Name: "web-a", Addr: "127.0.1.1:8012", Ready: true, FastPath: true},
		{Name: "web-b", Addr: "127.0.1.2:8012", Ready: true, FastPath: true},
		{Name: "web-c", Addr: "127.0.1.3:8012", Ready: true, FastPath: true},
	})
	cancel()
	for range ch {
	}
	for range shared {
	}
}

package gatestatus

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/kube/controlplane"
	"github.com/podgate/podgate/node/proc"
)

// These tests run the service against a real control plane (etcd,
// kube-apiserver, controller manager, scheduler: package controlplane),
// one for the whole package, each test on nodes of its own. Pods are
// made in the API with spec.nodeName and status.podIP set; their pod IPs
// are loopback addresses of 127.0.240.0/24 (no other test of the
// repository uses that range), and a gate "in" a pod dials the service
// from its pod IP, as it does from inside the pod's network.

var (
	sharedOnce sync.Once
	shared     *controlplane.ControlPlane
	sharedErr  error
	sharedDir  string
)

func TestMain(m *testing.M) {
	// Before anything else: the guardian of the control plane's
	// Supervisor is this test binary, re-executed.
	proc.RunReaperIfAsked()
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the control plane:", err)
			code = 1
		}
	}
	if sharedDir != "" {
		_ = os.RemoveAll(sharedDir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// controlPlane is the package's control plane, started on first use.
func controlPlane(t *testing.T) *controlplane.ControlPlane {
	t.Helper()
	sharedOnce.Do(func() {
		sharedDir, sharedErr = os.MkdirTemp("", "gatestatus-cp-")
		if sharedErr != nil {
			return
		}
		shared, sharedErr = controlplane.Start(context.Background(), controlplane.Options{Dir: sharedDir})
	})
	if sharedErr != nil {
		t.Fatalf("control plane: %v", sharedErr)
	}
	return shared
}

const testWait = 30 * time.Second

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// nextIP hands out the tests' pod IPs, each once.
var nextIP atomic.Int32

func podIP() netip.Addr {
	n := nextIP.Add(1)
	return netip.AddrFrom4([4]byte{127, 0, 240, byte(n)})
}

// harness is one node status service on a node of the test's own.
type harness struct {
	t       *testing.T
	admin   kubernetes.Interface
	node    string
	svc     *Service
	url     string
	clk     *testingclock.FakeClock
	watches *atomic.Int64 // watch requests the service sent to the API server
	patches *patchGate
	stop    func()
}

var (
	nodeName = regexp.MustCompile(`[^a-z0-9]+`)
	nodes    atomic.Int32
)

// startService runs a service for a node named after the test. change
// may adjust its options (and the client's configuration) first.
func startService(t *testing.T, change func(*Options, *rest.Config)) *harness {
	t.Helper()
	return startServiceOn(t, "", "127.0.0.1:0", change)
}

// startServiceOn runs a service for node (a new one named after the test
// when empty) on addr.
func startServiceOn(t *testing.T, node, addr string, change func(*Options, *rest.Config)) *harness {
	t.Helper()
	cp := controlPlane(t)
	admin, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, admin: admin, clk: testingclock.NewFakeClock(time.Now()), watches: &atomic.Int64{}, patches: &patchGate{}}
	h.node = node
	if node == "" {
		// Named after the test, numbered: a test may run two services.
		name := strings.Trim(nodeName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
		name = name[max(0, len(name)-50):]
		h.node = fmt.Sprintf("n%d-%s", nodes.Add(1), strings.Trim(name, "-"))
		// A Node object, so that the pod garbage collector does not take
		// its pods for orphans.
		if _, err := admin.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: h.node}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(cp.AdminConfig())
	cfg.QPS, cfg.Burst = ClientQPS, ClientBurst // as podgate node-status sets them
	opts := Options{Node: h.node, Clock: h.clk, IdentityWait: 300 * time.Millisecond}
	if change != nil {
		change(&opts, cfg)
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &countingTransport{next: rt, watches: h.watches, patches: h.patches}
	})
	if opts.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if h.svc, err = New(opts); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	h.url = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.svc.Run(ctx, ln) }()
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("the service ended with %v", err)
				}
			case <-time.After(testWait):
				t.Errorf("the service did not stop within %s", testWait)
			}
		})
	}
	t.Cleanup(h.stop)
	eventually(t, "the service is ready", func() bool { return h.svc.pods.isSynced() })
	return h
}

// countingTransport counts the service's watches on the API server, and
// can hold its PATCHes (patchGate).
type countingTransport struct {
	next    http.RoundTripper
	watches *atomic.Int64
	patches *patchGate
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Query().Get("watch") == "true" {
		c.watches.Add(1)
	}
	if r.Method == http.MethodPatch {
		c.patches.pass(r)
	}
	return c.next.RoundTrip(r)
}

// patchGate holds the service's PATCHes while closed, and counts them.
type patchGate struct {
	mu     sync.Mutex
	held   chan struct{}
	count  int
	bodies []string
}

func (g *patchGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = make(chan struct{})
}

func (g *patchGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held != nil {
		close(g.held)
		g.held = nil
	}
}

func (g *patchGate) pass(r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	g.mu.Lock()
	g.count++
	g.bodies = append(g.bodies, string(body))
	held := g.held
	g.mu.Unlock()
	if held != nil {
		<-held
	}
}

func (g *patchGate) seen() (int, []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.count, append([]string(nil), g.bodies...)
}

// podOpts shape a test pod.
type podOpts struct {
	node        string // default: the harness's
	hostNetwork bool
	phase       corev1.PodPhase
	noGate      bool
	gateStarted time.Time // zero: the gate container is not running
	// statusSource is the gate's PODGATE_STATUS_SOURCE (default: the
	// node status service's URL, as the injection writes it).
	statusSource string
}

// createPod makes pod name on the harness's node (or o.node) with pod IP
// ip, an injected pod as the webhook makes it: the gate container and
// the readiness gate of its condition. Its status has a condition of the
// kubelet's already, which the gate's writes must leave as it is.
func (h *harness) createPod(name string, ip netip.Addr, o podOpts) *corev1.Pod {
	h.t.Helper()
	ctx := context.Background()
	if o.node == "" {
		o.node = h.node
	}
	if o.phase == "" {
		o.phase = corev1.PodRunning
	}
	spec := corev1.PodSpec{NodeName: o.node, HostNetwork: o.hostNetwork, Containers: []corev1.Container{{Name: "app", Image: "ghcr.io/podgate/testapp"}}}
	if !o.noGate {
		src := o.statusSource
		if src == "" {
			src = "http://$(" + contract.EnvHostIP + "):9026"
		}
		spec.Containers = append(spec.Containers, corev1.Container{Name: contract.GateContainerName, Image: "ghcr.io/podgate/podgate",
			Env: []corev1.EnvVar{{Name: contract.EnvStatusSource, Value: src}}})
		spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: contract.ContainersReadyCondition}}
	}
	p, err := h.admin.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	p.Status = corev1.PodStatus{
		Phase: o.phase, PodIP: ip.String(), PodIPs: []corev1.PodIP{{IP: ip.String()}}, HostIP: "127.0.0.1",
		Conditions:        []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}},
	}
	if !o.noGate {
		gs := corev1.ContainerStatus{Name: contract.GateContainerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
		if !o.gateStarted.IsZero() {
			gs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(o.gateStarted)}}
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, gs)
	}
	if p, err = h.admin.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		_ = h.admin.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	})
	if o.node == h.node {
		h.waitCached(p)
	}
	return p
}

// waitCached waits until the service's informer has p's version.
func (h *harness) waitCached(p *corev1.Pod) {
	h.t.Helper()
	eventually(h.t, "the service sees pod "+p.Name+" at "+p.ResourceVersion, func() bool {
		st, _, _ := h.svc.pods.get(keyOf(p.Namespace, p.Name))
		return st != nil && st.rv >= rvOf(p.ResourceVersion)
	})
}

// from is an HTTP client whose connections come from ip, as a pod's do.
func from(ip netip.Addr) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: dialerFrom(ip)}}
}

func dialerFrom(ip netip.Addr) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip.AsSlice()}, Timeout: 5 * time.Second}
	return d.DialContext
}

// gateConfig is the gate's client configuration for the service, from
// the pod's address.
func (h *harness) gateConfig(ip netip.Addr) *rest.Config {
	return &rest.Config{Host: h.url, Dial: dialerFrom(ip)}
}

// events are the Events of reason on pod p.
func (h *harness) events(p *corev1.Pod, reason string) []corev1.Event {
	h.t.Helper()
	sel := fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.uid", string(p.UID)), fields.OneTermEqualSelector("reason", reason))
	list, err := h.admin.CoreV1().Events(p.Namespace).List(context.Background(), metav1.ListOptions{FieldSelector: sel.String()})
	if err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

// status decodes a Status answer.
func status(t *testing.T, body []byte) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("not a Status: %v: %s", err, body)
	}
	return st
}

// do sends a request from ip and returns the code and body.
func do(t *testing.T, c *http.Client, method, url, contentType, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

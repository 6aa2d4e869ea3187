package podapi

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/gate"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/gate/readiness"
	"github.com/podgate/podgate/local/apiserver"
	"github.com/podgate/podgate/local/objstore"
	"github.com/podgate/podgate/node/proc"
	"github.com/podgate/podgate/test/testapp"
)

func TestMain(m *testing.M) {
	// Before anything else: the guardian of the Supervisors these tests
	// start is this test binary, re-executed.
	proc.RunReaperIfAsked()
	goleak.VerifyTestMain(m)
}

const testWait = 30 * time.Second

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// startAPI runs a real control API over a real store on 127.0.0.1:0.
func startAPI(t *testing.T) (*objstore.Store, string) {
	t.Helper()
	st := objstore.New(objstore.Options{})
	ln, err := apiserver.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- apiserver.NewServer(apiserver.Config{Store: st}).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("control API: %v", err)
		}
	})
	return st, "http://" + ln.Addr().String()
}

func pod(statuses ...corev1.ContainerStatus) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"},
		Status:     corev1.PodStatus{ContainerStatuses: statuses},
	}
}

func running(name string, ready bool, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name: name, Ready: ready, RestartCount: restarts,
		ContainerID: "podgate://" + name + "-" + strconv.Itoa(int(restarts)),
		State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
	}
}

// recorder collects what a Source reports.
type recorder struct {
	mu   sync.Mutex
	last []readiness.ContainerStatus
	n    int
}

func (r *recorder) update(s []readiness.ContainerStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last, r.n = s, r.n+1
}

func (r *recorder) get() ([]readiness.ContainerStatus, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last, r.n
}

func TestSourceReportsThePodsContainers(t *testing.T) {
	st, url := startAPI(t)
	src, err := ForURL(url, "default", "web-1")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var rec recorder
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Watch(ctx, rec.update) }()

	eventually(t, "a missing pod is reported as no containers", func() bool { s, n := rec.get(); return n == 1 && len(s) == 0 })
	if _, err := st.Pods.Create(pod(running("web", true, 0))); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the created pod is reported", func() bool { s, _ := rec.get(); return len(s) == 1 && s[0].Ready })
	if _, err := st.Pods.Modify("default", "web-1", func(p *corev1.Pod) error {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name: "web", RestartCount: 1,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s"}},
		}}
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{running("sidecar", true, 0)}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the change is reported", func() bool { s, _ := rec.get(); return len(s) == 2 })
	s, _ := rec.get()
	want := []readiness.ContainerStatus{
		{Name: "sidecar", Ready: true, Running: true, ContainerID: "podgate://sidecar-0"},
		{Name: "web", RestartCount: 1, Message: "waiting: CrashLoopBackOff: back-off 10s"},
	}
	for i := range want {
		if s[i] != want[i] {
			t.Errorf("status %d = %+v, want %+v", i, s[i], want[i])
		}
	}
	if _, err := st.Pods.Delete("default", "web-1"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deletion is reported", func() bool { s, _ := rec.get(); return len(s) == 0 })
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("Watch after cancel: %v", err)
	}
}

func TestNewNeedsThePodName(t *testing.T) {
	if _, err := ForURL("http://127.0.0.1:9700", "default", ""); err == nil {
		t.Error("no error without a pod name")
	}
}

// TestGateFollowsTheNodeAgent runs a gate whose exec-probed sidecar's
// readiness only the node agent knows, against a real control API.
func TestGateFollowsTheNodeAgent(t *testing.T) {
	st, url := startAPI(t)
	if _, err := st.Pods.Create(pod(running("web", true, 0), running("exec-sidecar", false, 0))); err != nil {
		t.Fatal(err)
	}
	app, err := testapp.Start(testapp.Config{Addr: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Shutdown(context.Background())
	host, portStr, _ := net.SplitHostPort(app.Addr())
	port, _ := strconv.Atoi(portStr)

	cfg := contract.Defaults()
	cfg.UpstreamHost, cfg.UserPort, cfg.DrainQuietPeriod = host, port, 0
	cfg.Namespace, cfg.Pod, cfg.StatusSource = "default", "web-1", url
	cfg.ReadinessProbes = []*corev1.Probe{{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(port)}}}}
	cfg.ReadinessContainers = []string{"web"}
	cfg.Containers = []string{"web", "exec-sidecar"}
	cfg.DelegatedReadiness = []string{"exec-sidecar"}
	src, err := ForURL(url, cfg.Namespace, cfg.Pod)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	g, err := gate.New(gate.Options{Config: cfg, Status: src})
	if err != nil {
		t.Fatal(err)
	}
	var ls gate.Listeners
	for _, dst := range []*net.Listener{&ls.Serving, &ls.Admin, &ls.Metrics} {
		if *dst, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, ls) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	health := func() int {
		req, _ := http.NewRequest(http.MethodGet, "http://"+ls.Serving.Addr().String()+"/", nil)
		req.Header.Set("User-Agent", "kube-probe/1.37")
		req.Header.Set("K-Network-Probe", "queue")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	setSidecar := func(ready bool) {
		t.Helper()
		if _, err := st.Pods.Modify("default", "web-1", func(p *corev1.Pod) error {
			p.Status.ContainerStatuses[1].Ready = ready
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}

	eventually(t, "the web container was probed", func() bool { return g.Aggregator().Report()[0].Ready })
	if code := health(); code != http.StatusServiceUnavailable {
		t.Fatalf("health with the exec sidecar unready: %d, want 503", code)
	}
	setSidecar(true)
	eventually(t, "the gate is ready", g.Ready)
	if code := health(); code != http.StatusOK {
		t.Errorf("health: %d, want 200", code)
	}
	setSidecar(false)
	eventually(t, "the gate is unready", func() bool { return !g.Ready() })
	if code := health(); code != http.StatusServiceUnavailable {
		t.Errorf("health: %d, want 503", code)
	}
}

func TestSourceReportsThePodsDeletion(t *testing.T) {
	st, url := startAPI(t)
	if _, err := st.Pods.Create(pod(running("web", true, 0))); err != nil {
		t.Fatal(err)
	}
	src, err := ForURL(url, "default", "web-1")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var mu sync.Mutex
	var reports []gate.PodStatus
	last := func() (gate.PodStatus, int) {
		mu.Lock()
		defer mu.Unlock()
		if len(reports) == 0 {
			return gate.PodStatus{}, 0
		}
		return reports[len(reports)-1], len(reports)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- src.WatchPod(ctx, func(ps gate.PodStatus) {
			mu.Lock()
			defer mu.Unlock()
			reports = append(reports, ps)
		})
	}()
	eventually(t, "the running pod is reported, not terminating", func() bool {
		ps, n := last()
		return n == 1 && len(ps.Containers) == 1 && !ps.Terminating
	})
	if _, err := st.Pods.Modify("default", "web-1", func(p *corev1.Pod) error {
		now := metav1.Now()
		p.DeletionTimestamp = &now
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deletionTimestamp is reported as terminating", func() bool {
		ps, _ := last()
		return ps.Terminating && len(ps.Containers) == 1
	})
	if _, err := st.Pods.Delete("default", "web-1"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a pod gone is terminating, without containers", func() bool {
		ps, n := last()
		return n >= 3 && ps.Terminating && len(ps.Containers) == 0
	})
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("WatchPod after cancel: %v", err)
	}
}

// TestGateDrainsOnTheNodeAgentsDeletion: the gate learns of its pod's
// deletion from the node agent (the deletionTimestamp), not only from its
// own SIGTERM, which as a native sidecar comes last. A container's preStop
// hook then waits for the drain at once, however long the quiet period —
// no one-second "this is a restart" release — until the only router says
// it sends nothing more.
func TestGateDrainsOnTheNodeAgentsDeletion(t *testing.T) {
	st, url := startAPI(t)
	if _, err := st.Pods.Create(pod(running("web", true, 0))); err != nil {
		t.Fatal(err)
	}
	app, err := testapp.Start(testapp.Config{Addr: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Shutdown(context.Background())
	host, portStr, _ := net.SplitHostPort(app.Addr())
	port, _ := strconv.Atoi(portStr)

	cfg := contract.Defaults()
	cfg.UpstreamHost, cfg.UserPort, cfg.DrainQuietPeriod = host, port, time.Hour
	cfg.Namespace, cfg.Pod, cfg.StatusSource, cfg.OnlyRouter = "default", "web-1", url, contract.OnlyRouterActivator
	cfg.Containers = []string{"web"}
	src, err := ForURL(url, cfg.Namespace, cfg.Pod)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	clk := testingclock.NewFakeClock(time.Now())
	g, err := gate.New(gate.Options{Config: cfg, Status: src, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	var ls gate.Listeners
	for _, dst := range []*net.Listener{&ls.Serving, &ls.Admin, &ls.Metrics} {
		if *dst, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, ls) }()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	admin := "http://" + ls.Admin.Addr().String()
	eventually(t, "the gate is ready", g.Ready)

	if _, err := st.Pods.Modify("default", "web-1", func(p *corev1.Pod) error {
		now := metav1.Now()
		p.DeletionTimestamp = &now
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the gate drains on the deletionTimestamp", g.Drainer().Draining)
	if g.Ready() {
		t.Error("ready while draining")
	}
	hook := make(chan string, 1)
	go func() {
		resp, err := client.Get(admin + contract.DrainPath)
		if err != nil {
			hook <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		hook <- string(b)
	}()
	eventually(t, "the preStop hook waits", func() bool { return g.PreStopsWaiting() == 1 })
	clk.Step(5 * time.Second) // the one-second rule would have released it
	select {
	case got := <-hook:
		t.Fatalf("preStop hook answered %q before the drain ended", got)
	case <-time.After(50 * time.Millisecond):
	}
	resp, err := client.Post(admin+contract.UnroutedPath+"?pod=web-1", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case got := <-hook:
		if got != "drained\n" {
			t.Errorf("preStop hook answered %q, want drained", got)
		}
	case <-time.After(testWait):
		t.Fatal("the preStop hook was not released by the drain's end")
	}
	select {
	case err := <-done:
		t.Fatalf("Serve returned before SIGTERM: %v", err)
	default:
	}
	cancel() // SIGTERM: the drain is over, the gate exits at once
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(testWait):
		t.Fatal("Serve did not return after SIGTERM")
	}
}

// TestForClusterReadsKubeconfig: PODGATE_STATUS_SOURCE=kubernetes finds
// the API server by $KUBECONFIG first, even in a pod: podgate's node gives
// each pod a kubeconfig with its bound token and KUBERNETES_SERVICE_HOST,
// but no in-cluster token file.
func TestForClusterReadsKubeconfig(t *testing.T) {
	st, url := startAPI(t)
	if _, err := st.Pods.Create(pod(running("web", true, 0))); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "`+url+`"}}]
contexts: [{name: local, context: {cluster: local, user: me}}]
users: [{name: me, user: {}}]
current-context: local
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	// Never dialed: the kubeconfig wins (an in-cluster attempt would fail
	// reading the absent token file first).
	t.Setenv("KUBERNETES_SERVICE_HOST", "kubernetes.invalid")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
	src, err := ForCluster("default", "web-1")
	if err != nil {
		t.Fatal(err)
	}
	var rec recorder
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Watch(ctx, rec.update) }()
	eventually(t, "the pod's container is reported", func() bool { s, _ := rec.get(); return len(s) == 1 && s[0].Ready })
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("Watch after cancel: %v", err)
	}
}

func TestForClusterWithoutAClusterSaysSo(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("HOME", t.TempDir())
	_, err := ForCluster("default", "web-1")
	if err == nil || !strings.Contains(err.Error(), "kubeconfig") {
		t.Fatalf("got %v, want an error naming the kubeconfig", err)
	}
}

// TestSourceReportsThePodsReadyCondition: the pod's Ready condition, which
// its endpoint follows, is in every report.
func TestSourceReportsThePodsReadyCondition(t *testing.T) {
	st, url := startAPI(t)
	if _, err := st.Pods.Create(pod(running("web", true, 0))); err != nil {
		t.Fatal(err)
	}
	src, err := ForURL(url, "default", "web-1")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var last gate.PodStatus
	var n int
	get := func() (gate.PodStatus, int) {
		mu.Lock()
		defer mu.Unlock()
		return last, n
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- src.WatchPod(ctx, func(ps gate.PodStatus) {
			mu.Lock()
			defer mu.Unlock()
			last, n = ps, n+1
		})
	}()
	eventually(t, "a pod without a Ready condition is reported not Ready", func() bool { ps, n := get(); return n >= 1 && !ps.Ready })
	setReady := func(s corev1.ConditionStatus) {
		t.Helper()
		if _, err := st.Pods.Modify("default", "web-1", func(p *corev1.Pod) error {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: s}}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	setReady(corev1.ConditionTrue)
	eventually(t, "Ready=True is reported Ready", func() bool { ps, _ := get(); return ps.Ready })
	setReady(corev1.ConditionFalse)
	eventually(t, "Ready=False is reported not Ready", func() bool { ps, _ := get(); return !ps.Ready })
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("WatchPod after cancel: %v", err)
	}
}

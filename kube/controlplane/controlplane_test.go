package controlplane

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	appsclient "k8s.io/client-go/kubernetes/typed/apps/v1"
	coreclient "k8s.io/client-go/kubernetes/typed/core/v1"
	discoveryclient "k8s.io/client-go/kubernetes/typed/discovery/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/podgate/podgate/internal/k8sbin"
	"github.com/podgate/podgate/node/proc"
	"github.com/podgate/podgate/test/syncbuf"
)

// helperEnv makes the test binary a stand-in for a process that runs a
// control plane and dies: it starts one in the directory the variable
// names, prints the components' pids and waits to be killed.
const helperEnv = "PODGATE_CONTROLPLANE_TEST_HELPER"

func TestMain(m *testing.M) {
	// Before anything else: the guardian of the Supervisors these tests
	// start is this test binary, re-executed.
	proc.RunReaperIfAsked()
	if dir := os.Getenv(helperEnv); dir != "" {
		os.Exit(runHelper(dir))
	}
	goleak.VerifyTestMain(m)
}

func runHelper(dir string) int {
	cp, err := Start(context.Background(), Options{Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	b, _ := json.Marshal(cp.Pids())
	fmt.Println(string(b))
	select {} // until the test kills us
}

// start runs a control plane for the test, stopped at its end.
func start(t *testing.T, ctx context.Context, opts Options) *ControlPlane {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	cp, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	tm := cp.Timings()
	t.Logf("control plane ready in %s (API server ready %s, controllers healthy %s)",
		tm.Ready.Round(time.Millisecond), tm.APIServerReady.Round(time.Millisecond), tm.ControllersHealthy.Round(time.Millisecond))
	return cp
}

// eventually polls cond until it holds, failing the test after timeout
// with cond's last reason.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %s", what, timeout, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie does not count).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(after, "Z")
}

// processesIn lists the processes whose command line names dir: every
// component's does (its data, certificates or kubeconfig are there).
func processesIn(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), dir) || !alive(pid) {
			continue
		}
		out = append(out, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
	}
	return out
}

func noProcessLeft(t *testing.T, dir string, pids map[string]int) {
	t.Helper()
	eventually(t, 30*time.Second, "every component gone", func() (bool, string) {
		for name, pid := range pids {
			if alive(pid) {
				return false, fmt.Sprintf("%s (pid %d) still runs", name, pid)
			}
		}
		if left := processesIn(dir); len(left) > 0 {
			return false, "still running: " + strings.Join(left, "; ")
		}
		return true, ""
	})
}

func TestControlPlaneRunsTheRealControllers(t *testing.T) {
	cp := start(t, t.Context(), Options{})
	admin := cp.AdminConfig()
	core := coreclient.NewForConfigOrDie(admin)
	ctx := t.Context()

	t.Run("kubectl version", func(t *testing.T) {
		kubectl, err := k8sbin.Path(k8sbin.Kubectl)
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(kubectl, "--kubeconfig", cp.AdminKubeconfig(), "version", "-o", "json").Output()
		if err != nil {
			t.Fatalf("kubectl version: %v\n%s", err, out)
		}
		var v struct {
			ServerVersion struct{ GitVersion string } `json:"serverVersion"`
		}
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("kubectl version: %v\n%s", err, out)
		}
		if v.ServerVersion.GitVersion != "v1.37.2" {
			t.Errorf("server version %q, want v1.37.2", v.ServerVersion.GitVersion)
		}
	})

	t.Run("client-go discovery", func(t *testing.T) {
		dc, err := discovery.NewDiscoveryClientForConfig(admin)
		if err != nil {
			t.Fatal(err)
		}
		groups, err := dc.ServerGroups()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, g := range groups.Groups {
			names = append(names, g.Name)
		}
		for _, want := range []string{"", "apps", "coordination.k8s.io", "discovery.k8s.io", "rbac.authorization.k8s.io"} {
			if !slices.Contains(names, want) {
				t.Errorf("API group %q not served; groups: %v", want, names)
			}
		}
	})

	t.Run("the ReplicaSet controller creates a Deployment's pods", func(t *testing.T) {
		apps := appsclient.NewForConfigOrDie(admin)
		if _, err := apps.Deployments("default").Create(ctx, deployment("web", 2), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, time.Minute, "2 pods of Deployment web", func() (bool, string) {
			pods, err := core.Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return false, err.Error()
			}
			for _, p := range pods.Items {
				if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "ReplicaSet" {
					return false, fmt.Sprintf("pod %s owned by %v, want a ReplicaSet", p.Name, p.OwnerReferences)
				}
			}
			return len(pods.Items) == 2, fmt.Sprintf("%d pods", len(pods.Items))
		})
	})

	t.Run("the scheduler binds the pods to a node registered by hand", func(t *testing.T) {
		// Registered with the node's own credential, as a kubelet does:
		// NodeRestriction lets a node create its own Node object.
		nodeCore := nodeClient(t, cp, "node-a")
		if _, err := nodeCore.Nodes().Create(ctx, readyNode("node-a"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, time.Minute, "both pods bound to node-a", func() (bool, string) {
			pods, err := core.Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return false, err.Error()
			}
			bound := 0
			for _, p := range pods.Items {
				if p.Spec.NodeName == "node-a" {
					bound++
				}
			}
			return bound == 2 && len(pods.Items) == 2, fmt.Sprintf("%d of %d pods bound", bound, len(pods.Items))
		})
	})

	t.Run("the Node authorizer limits a node's credential", func(t *testing.T) {
		if _, err := core.Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "unrelated"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := core.Nodes().Create(ctx, readyNode("node-b"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		node := nodeClient(t, cp, "node-a")
		nodeSlices := discoveryclient.NewForConfigOrDie(nodeConfig(t, cp, "node-a"))
		tests := []struct {
			name      string
			do        func() error
			forbidden bool
		}{
			{"reads its own Node", func() error { _, err := node.Nodes().Get(ctx, "node-a", metav1.GetOptions{}); return err }, false},
			{"lists the pods bound to it", func() error {
				_, err := node.Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-a"})
				return err
			}, false},
			{"reads no Secret its pods do not use", func() error {
				_, err := node.Secrets("default").Get(ctx, "unrelated", metav1.GetOptions{})
				return err
			}, true},
			{"lists EndpointSlices (" + NodeEndpointSlicesRole + ")", func() error {
				_, err := nodeSlices.EndpointSlices("").List(ctx, metav1.ListOptions{})
				return err
			}, false},
			{"watches EndpointSlices", func() error {
				w, err := nodeSlices.EndpointSlices("").Watch(ctx, metav1.ListOptions{})
				if err == nil {
					w.Stop()
				}
				return err
			}, false},
			{"writes no EndpointSlice", func() error {
				_, err := nodeSlices.EndpointSlices("default").Create(ctx, &discoveryv1.EndpointSlice{
					ObjectMeta: metav1.ObjectMeta{Name: "by-a-node"}, AddressType: discoveryv1.AddressTypeIPv4}, metav1.CreateOptions{})
				return err
			}, true},
			{"changes no other Node", func() error {
				_, err := node.Nodes().Patch(ctx, "node-b", types.MergePatchType, []byte(`{"metadata":{"annotations":{"x":"y"}}}`), metav1.PatchOptions{})
				return err
			}, true},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := tt.do()
				if tt.forbidden != apierrors.IsForbidden(err) || (!tt.forbidden && err != nil) {
					t.Errorf("got %v, want forbidden=%v", err, tt.forbidden)
				}
			})
		}
	})

	t.Run("Stop leaves no process", func(t *testing.T) {
		pids := cp.Pids()
		for _, name := range []string{Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler} {
			if pids[name] == 0 {
				t.Errorf("no pid for %s: %v", name, pids)
			}
		}
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
		noProcessLeft(t, cp.Dir(), pids)
	})
}

func TestCancelledContextStopsEverything(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cp := start(t, ctx, Options{})
	pids := cp.Pids()
	cancel()
	select {
	case <-cp.Done():
	case <-time.After(2 * time.Minute):
		t.Fatal("the control plane did not stop when its context ended")
	}
	noProcessLeft(t, cp.Dir(), pids)
}

func TestComponentsDieWithTheirParent(t *testing.T) {
	dir := t.TempDir()
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), helperEnv+"="+dir)
	helper.Stderr = os.Stderr
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the helper printed no pids: %v", err)
	}
	var pids map[string]int
	if err := json.Unmarshal([]byte(line), &pids); err != nil || len(pids) != 4 {
		t.Fatalf("pids %q: %v", line, err)
	}
	// SIGKILL: no cleanup of the helper's own runs.
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	noProcessLeft(t, dir, pids)
}

func TestStartNamesTheComponentThatExits(t *testing.T) {
	dir := t.TempDir()
	_, err := Start(t.Context(), Options{Dir: dir, ExtraArgs: map[string][]string{KubeScheduler: {"--no-such-flag"}}})
	if err == nil {
		t.Fatal("Start succeeded with a scheduler that cannot start")
	}
	t.Logf("the error: %v", err)
	for _, want := range []string{"kube-scheduler exited", "unknown flag: --no-such-flag", filepath.Join(dir, "kube-scheduler.log")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	noProcessLeft(t, dir, nil)
}

func TestAPortTakenMeanwhileIsRetriedThenReported(t *testing.T) {
	// A port held for the whole test, given to the scheduler: every
	// attempt finds it taken, as a port taken between choosing and binding
	// would be.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	dir := t.TempDir()
	var progress syncbuf.Buffer
	_, err = Start(t.Context(), Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(&progress, nil)),
		ExtraArgs: map[string][]string{KubeScheduler: {"--secure-port=" + port}}})
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("got %v, want the scheduler's bind error", err)
	}
	// Every attempt but the last was retried. (Which component found its
	// port taken is the scheduler's in every attempt that reached it; on
	// a loaded machine where other tests take free ports too, an attempt
	// may also end earlier, at another component's port: that is the
	// retry's very case, so the scheduler's starts are not counted
	// exactly.)
	if n := strings.Count(progress.String(), "a port was taken meanwhile"); n != startAttempts-1 {
		t.Errorf("%d retries, want %d:\n%s", n, startAttempts-1, progress.String())
	}
	log, err := os.ReadFile(filepath.Join(dir, "kube-scheduler.log"))
	if err != nil {
		t.Fatal(err)
	}
	// Each start writes its command line first; each found its port taken.
	starts := len(regexp.MustCompile(`(?m)^# `).FindAll(log, -1))
	binds := strings.Count(string(log), "bind: address already in use")
	if starts < 1 || starts > startAttempts || binds != starts {
		t.Errorf("the scheduler started %d times (want 1 to %d), %d of them failing to bind:\n%s", starts, startAttempts, binds, log)
	}
	noProcessLeft(t, dir, nil)
}

func TestOptionsAreChecked(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no dir", Options{}, "Options.Dir is required"},
		{"bad bind address", Options{Dir: t.TempDir(), BindAddress: "localhost"}, `bind address "localhost"`},
		{"bad advertise address", Options{Dir: t.TempDir(), AdvertiseAddress: "10.0.0"}, `advertise address "10.0.0"`},
		{"bad service CIDR", Options{Dir: t.TempDir(), ServiceCIDR: "10.96.0.0"}, `service CIDR "10.96.0.0"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Start(t.Context(), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// BenchmarkStartToReady measures Start: the PKI, the four components and
// the readiness waits, up to the `default` ServiceAccount.
func BenchmarkStartToReady(b *testing.B) {
	for b.Loop() {
		cp, err := Start(b.Context(), Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		tm := cp.Timings()
		b.ReportMetric(float64(tm.APIServerReady.Milliseconds()), "apiserver-ready-ms")
		b.ReportMetric(float64(tm.Ready.Milliseconds()), "ready-ms")
		b.StopTimer()
		if err := cp.Stop(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

func nodeClient(t *testing.T, cp *ControlPlane, name string) *coreclient.CoreV1Client {
	t.Helper()
	return coreclient.NewForConfigOrDie(nodeConfig(t, cp, name))
}

// nodeConfig is a client-go config with node name's credential.
func nodeConfig(t *testing.T, cp *ControlPlane, name string) *rest.Config {
	t.Helper()
	path, err := cp.NodeKubeconfig(name)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func deployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "ghcr.io/podgate/testapp"}}},
			},
		},
	}
}

// readyNode is a Node as a kubelet registers it: room for pods, Ready.
func readyNode(name string) *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	now := metav1.Now()
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: corev1.NodeStatus{
			Capacity:    res,
			Allocatable: res,
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: now, LastTransitionTime: now,
			}},
		},
	}
}

package kube

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	coreclient "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/podgate/podgate/internal/k8sbin"
	"github.com/podgate/podgate/kube/controlplane"
	"github.com/podgate/podgate/node"
	"github.com/podgate/podgate/node/images"
	"github.com/podgate/podgate/test/syncbuf"
)

// Pod ranges of these tests: their own, so they run beside `podgate run`
// and the other packages' tests.
const (
	nodeCIDR   = "127.3.1.0/24"
	helperCIDR = "127.3.2.0/24"
)

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

// testappPod is a pod of the test app bound to node, named by its
// --name too (so its process can be found), with fast probes.
func testappPod(name, nodeName string) *corev1.Pod {
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(8080)}},
			PeriodSeconds:    1,
			FailureThreshold: 1,
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName: nodeName,
			Containers: []corev1.Container{{
				Name: "app", Image: images.TestappImage,
				Args: []string{"--port", "8080", "--name", "kubenode-test-" + name},
				// Liveness from the moment the app serves (a failure
				// restarts it at once).
				StartupProbe:   &corev1.Probe{ProbeHandler: probe("/readyz").ProbeHandler, PeriodSeconds: 1, FailureThreshold: 60},
				ReadinessProbe: probe("/readyz"),
				LivenessProbe:  probe("/livez"),
			}},
			TerminationGracePeriodSeconds: ptr.To[int64](10),
		},
	}
}

// appPids are the processes of the test app started for pod name.
func appPids(name string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte("\x00kubenode-test-"+name+"\x00")) {
			continue
		}
		if alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

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

func condition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func nodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

// waitPod polls pod until cond holds.
func waitPod(t *testing.T, core *coreclient.CoreV1Client, name, what string, cond func(*corev1.Pod) (bool, string)) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	eventually(t, 60*time.Second, "pod "+name+": "+what, func() (bool, string) {
		p, err := core.Pods("default").Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		last = p
		return cond(p)
	})
	return last
}

func running(p *corev1.Pod) (bool, string) {
	ready := condition(p, corev1.PodReady)
	ok := p.Status.Phase == corev1.PodRunning && ready != nil && ready.Status == corev1.ConditionTrue
	return ok, fmt.Sprintf("phase %s, Ready %v", p.Status.Phase, ready)
}

// podEvents lists the events about pod name.
func podEvents(t *testing.T, core *coreclient.CoreV1Client, name string) []corev1.Event {
	t.Helper()
	evs, err := core.Events("default").List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	return evs.Items
}

func TestNodeRunsPodsOfARealControlPlane(t *testing.T) {
	cp, err := controlplane.Start(t.Context(), controlplane.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	admin := cp.AdminConfig()
	core := coreclient.NewForConfigOrDie(admin)
	kubeconfig, err := cp.NodeKubeconfig("node-1")
	if err != nil {
		t.Fatal(err)
	}

	var log syncbuf.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ready := make(chan time.Duration, 1)
	begin := time.Now()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{
			Kubeconfig: kubeconfig, NodeName: "node-1", PodCIDR: nodeCIDR, PodsDir: t.TempDir(),
			LeaseRenewInterval: time.Second, Output: &log,
			Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})),
			Ready:  func() { ready <- time.Since(begin) },
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(time.Minute):
			t.Error("Run did not return within a minute of its context's end")
		}
		if t.Failed() {
			t.Logf("node log:\n%s", log.String())
		}
	})

	t.Run("the node registers and turns Ready", func(t *testing.T) {
		var n *corev1.Node
		eventually(t, time.Minute, "node-1 Ready", func() (bool, string) {
			var err error
			if n, err = core.Nodes().Get(t.Context(), "node-1", metav1.GetOptions{}); err != nil {
				return false, err.Error()
			}
			return nodeReady(n) == corev1.ConditionTrue, fmt.Sprintf("Ready %s", nodeReady(n))
		})
		t.Logf("node Ready %s after Run was called (agent watching its pods after %s)", time.Since(begin).Round(time.Millisecond), (<-ready).Round(time.Millisecond))
		checks := []struct{ what, got, want string }{
			{"spec.podCIDR", n.Spec.PodCIDR, nodeCIDR},
			{"kubeletVersion", n.Status.NodeInfo.KubeletVersion, KubeletVersion},
			{"InternalIP", n.Status.Addresses[0].Address, node.HostIP},
			{"allocatable pods", n.Status.Allocatable.Pods().String(), "110"},
			{"hostname label", n.Labels["kubernetes.io/hostname"], "node-1"},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
			}
		}
	})

	t.Run("a node registered with another pod range is refused", func(t *testing.T) {
		err := Run(t.Context(), Config{Kubeconfig: kubeconfig, NodeName: "node-1", PodCIDR: "127.3.9.0/24"})
		if err == nil || !strings.Contains(err.Error(), "registered with pod CIDR "+nodeCIDR) {
			t.Errorf("got %v, want a refusal naming %s", err, nodeCIDR)
		}
	})

	t.Run("the Lease renews", func(t *testing.T) {
		leases := coordclient.NewForConfigOrDie(admin).Leases("kube-node-lease")
		var first time.Time
		eventually(t, time.Minute, "the Lease renewed", func() (bool, string) {
			l, err := leases.Get(t.Context(), "node-1", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "node-1" || l.Spec.RenewTime == nil {
				return false, fmt.Sprintf("lease spec %+v", l.Spec)
			}
			if first.IsZero() {
				first = l.Spec.RenewTime.Time
			}
			return l.Spec.RenewTime.After(first), fmt.Sprintf("renewed at %s only", l.Spec.RenewTime)
		})
	})

	t.Run("a pod bound to the node runs and turns Ready through pods/status", func(t *testing.T) {
		if _, err := core.Pods("default").Create(t.Context(), testappPod("web", "node-1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		created := time.Now()
		p := waitPod(t, core, "web", "Running and Ready", running)
		t.Logf("pod Ready %s after it was created", time.Since(created).Round(time.Millisecond))
		if !strings.HasPrefix(p.Status.PodIP, "127.3.1.") {
			t.Errorf("pod IP %s, want one of %s", p.Status.PodIP, nodeCIDR)
		}
		var viaStatus bool
		for _, mf := range p.ManagedFields {
			if mf.Manager == "podgate-node" && mf.Subresource == "status" {
				viaStatus = true
			}
		}
		if !viaStatus {
			t.Errorf("no status written by podgate-node through pods/status; managed fields: %+v", p.ManagedFields)
		}
		// Bound at creation, no scheduler: the node reports it scheduled,
		// as the kubelet does.
		if sched := condition(p, corev1.PodScheduled); sched == nil || sched.Status != corev1.ConditionTrue {
			t.Errorf("PodScheduled = %+v, want True", sched)
		}
	})

	t.Run("a condition written by someone else survives the agent's writes", func(t *testing.T) {
		patch := `{"status":{"conditions":[{"type":"example.com/gate","status":"True","reason":"WrittenByTheTest"}]}}`
		if _, err := core.Pods("default").Patch(t.Context(), "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
		p := waitPod(t, core, "web", "Running and Ready", running)
		// The app turns unready: the agent writes Ready=False...
		toggle(t, p.Status.PodIP, "/toggleReady?set=false")
		waitPod(t, core, "web", "not Ready", func(p *corev1.Pod) (bool, string) {
			r := condition(p, corev1.PodReady)
			return r != nil && r.Status == corev1.ConditionFalse, fmt.Sprintf("Ready %v", r)
		})
		// ...and, while the probe keeps failing, counts its Unhealthy
		// event up: patches of the event it created.
		eventually(t, time.Minute, "a repeated Unhealthy event", func() (bool, string) {
			for _, ev := range podEvents(t, core, "web") {
				if ev.Reason == "Unhealthy" && ev.Count >= 2 {
					return true, ""
				}
			}
			return false, "no Unhealthy event with count 2 or more"
		})
		toggle(t, p.Status.PodIP, "/toggleReady?set=true")
		p = waitPod(t, core, "web", "Ready again", running)
		if c := condition(p, "example.com/gate"); c == nil || c.Status != corev1.ConditionTrue || c.Reason != "WrittenByTheTest" {
			t.Errorf("the test's condition is %+v after the agent's writes; conditions: %+v", c, p.Status.Conditions)
		}
	})

	t.Run("a liveness failure restarts the container with a Killing event", func(t *testing.T) {
		p := waitPod(t, core, "web", "Running and Ready", running)
		before := appPids("web")
		if len(before) != 1 {
			t.Fatalf("processes of pod web: %v, want one", before)
		}
		toggle(t, p.Status.PodIP, "/toggleLive?set=false")
		waitPod(t, core, "web", "restarted", func(p *corev1.Pod) (bool, string) {
			n := p.Status.ContainerStatuses[0].RestartCount
			return n >= 1, fmt.Sprintf("restart count %d", n)
		})
		var killing *corev1.Event
		for _, ev := range podEvents(t, core, "web") {
			if ev.Reason == "Killing" {
				killing = &ev
			}
		}
		if killing == nil {
			t.Fatal("no Killing event")
		}
		if want := "failed liveness probe, will be restarted"; !strings.Contains(killing.Message, want) || killing.Source.Host != "node-1" {
			t.Errorf("Killing event %q from %q, want %q from node-1", killing.Message, killing.Source.Host, want)
		}
		if alive(before[0]) {
			t.Errorf("the killed container's process %d still runs", before[0])
		}
	})

	t.Run("kubectl delete pod terminates it and the object disappears", func(t *testing.T) {
		waitPod(t, core, "web", "Running and Ready", running)
		pids := appPids("web")
		kubectl, err := k8sbin.Path(k8sbin.Kubectl)
		if err != nil {
			t.Fatal(err)
		}
		// --wait: kubectl returns once the object is gone, which only the
		// node's final delete does.
		out, err := exec.Command(kubectl, "--kubeconfig", cp.AdminKubeconfig(), "delete", "pod", "web", "--wait=true", "--timeout=60s").CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl delete: %v\n%s", err, out)
		}
		if _, err := core.Pods("default").Get(t.Context(), "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("pod web after kubectl delete: %v, want NotFound", err)
		}
		for _, pid := range pids {
			if alive(pid) {
				t.Errorf("container process %d of the deleted pod still runs", pid)
			}
		}
		var stopped bool
		for _, ev := range podEvents(t, core, "web") {
			stopped = stopped || ev.Reason == "Killing" && strings.Contains(ev.Message, "Stopping container")
		}
		if !stopped {
			t.Error("no Killing event saying the container was stopped")
		}
	})

	t.Run("a pod whose image the node lacks waits as for a failed pull, in kubectl get pods too", func(t *testing.T) {
		kubectl, err := k8sbin.Path(k8sbin.Kubectl)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			pod    string
			policy corev1.PullPolicy
			status string   // the waiting reason, kubectl's STATUS
			events []string // "REASON MESSAGE", in the order recorded
		}{
			{"pull-never", corev1.PullNever, "ErrImageNeverPull", []string{
				`ErrImageNeverPull Container image "example.test/absent:v1" is not present with pull policy of Never`,
				"Failed Error: ErrImageNeverPull"}},
			{"pull-absent", corev1.PullIfNotPresent, "ErrImagePull", []string{
				`Pulling Pulling image "example.test/absent:v1"`,
				`Failed Failed to pull image "example.test/absent:v1": ` + images.PullError("example.test/absent:v1"),
				"Failed Error: ErrImagePull"}},
		} {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: tc.pod, Namespace: "default"},
				Spec: corev1.PodSpec{NodeName: "node-1", TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{{Name: "app", Image: "example.test/absent:v1", ImagePullPolicy: tc.policy}}},
			}
			if _, err := core.Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitPod(t, core, tc.pod, "waiting as "+tc.status, func(p *corev1.Pod) (bool, string) {
				if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
					return false, fmt.Sprintf("statuses %+v", p.Status.ContainerStatuses)
				}
				w := p.Status.ContainerStatuses[0].State.Waiting
				return w.Reason == tc.status, fmt.Sprintf("waiting %s: %s", w.Reason, w.Message)
			})
			// The events go through the events API on their own: they
			// may follow the status.
			want := strings.Join(tc.events, "\n")
			eventually(t, time.Minute, tc.pod+"'s events", func() (bool, string) {
				var got []string
				for _, ev := range podEvents(t, core, tc.pod) {
					if ev.Source.Component == "kubelet" && ev.InvolvedObject.FieldPath == "spec.containers{app}" {
						got = append(got, ev.Reason+" "+ev.Message)
					}
				}
				return strings.Join(got, "\n") == want, fmt.Sprintf("the container's events\n%s\nwant\n%s", strings.Join(got, "\n"), want)
			})
			// kubectl's STATUS is the API server's table printer's: the
			// waiting reason.
			out, err := exec.Command(kubectl, "--kubeconfig", cp.AdminKubeconfig(), "get", "pod", tc.pod, "--no-headers").CombinedOutput()
			if f := strings.Fields(string(out)); err != nil || len(f) < 3 || f[2] != tc.status {
				t.Errorf("kubectl get pod %s: %v\n%s\nwant STATUS %s", tc.pod, err, out, tc.status)
			}
			out, err = exec.Command(kubectl, "--kubeconfig", cp.AdminKubeconfig(), "delete", "pod", tc.pod, "--wait=true", "--timeout=60s").CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl delete: %v\n%s", err, out)
			}
		}
	})

	t.Run("the status patch and the removal are preconditioned on the UID", func(t *testing.T) {
		// A node may not write pods of another node: the admin plays the
		// node here, for a pod bound to a node that does not run.
		pods := NewPods(core, nil)
		old, err := core.Pods("default").Create(t.Context(), testappPod("replaced", "nowhere"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := core.Pods("default").Delete(t.Context(), "replaced", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		cur, err := core.Pods("default").Create(t.Context(), testappPod("replaced", "nowhere"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stale := old.DeepCopy()
		stale.Status.Phase = corev1.PodFailed
		if err := pods.UpdatePodStatus(stale); !apierrors.IsConflict(err) {
			t.Errorf("status of the replaced pod: %v, want a Conflict", err)
		}
		if err := pods.RemovePod("default", "replaced", old.UID); err != nil {
			t.Errorf("RemovePod of the old pod: %v, want nil (the new pod is not the old one)", err)
		}
		got, err := core.Pods("default").Get(t.Context(), "replaced", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the new pod is gone: %v", err)
		}
		if got.UID != cur.UID || got.Status.Phase == corev1.PodFailed {
			t.Errorf("the new pod changed: uid %s (was %s), phase %s", got.UID, cur.UID, got.Status.Phase)
		}
		if err := pods.RemovePod("default", "replaced", cur.UID); err != nil {
			t.Errorf("RemovePod of the pod as it is: %v", err)
		}
	})

	t.Run("a write on a dropped connection is made again", func(t *testing.T) {
		// The admin plays the node, through a forwarder that drops the
		// first connection, as an API server restarting would.
		cfg := rest.CopyConfig(admin)
		cfg.Host = "https://" + flakyForwarder(t, strings.TrimPrefix(admin.Host, "https://"), 1)
		pods := NewPods(coreclient.NewForConfigOrDie(cfg), nil)
		p, err := core.Pods("default").Create(t.Context(), testappPod("flaky", "nowhere"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		if err := pods.UpdatePodStatus(p); err != nil {
			t.Fatalf("UpdatePodStatus through a dropped connection: %v", err)
		}
		got, err := core.Pods("default").Get(t.Context(), "flaky", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase != corev1.PodRunning {
			t.Errorf("phase %s, want Running", got.Status.Phase)
		}
		if err := pods.RemovePod("default", "flaky", p.UID); err != nil {
			t.Errorf("RemovePod: %v", err)
		}
	})

	t.Run("SIGKILL of a node leaves no container process", func(t *testing.T) {
		helperKubeconfig, err := cp.NodeKubeconfig("node-2")
		if err != nil {
			t.Fatal(err)
		}
		node2 := startNodeHelper(t, helperConfig{Kubeconfig: helperKubeconfig, NodeName: "node-2", PodCIDR: helperCIDR, PodsDir: t.TempDir()})
		if _, err := core.Pods("default").Create(t.Context(), testappPod("orphan", "node-2"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitPod(t, core, "orphan", "Running and Ready", running)
		pids := appPids("orphan")
		if len(pids) != 1 {
			t.Fatalf("processes of pod orphan: %v, want one", pids)
		}
		if err := node2.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = node2.Wait()
		eventually(t, 30*time.Second, "the container process gone", func() (bool, string) {
			return !alive(pids[0]), fmt.Sprintf("process %d still runs", pids[0])
		})
	})

	t.Run("stopping the node drains it", func(t *testing.T) {
		if _, err := core.Pods("default").Create(t.Context(), testappPod("last", "node-1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitPod(t, core, "last", "Running and Ready", running)
		pids := appPids("last")
		// The drain marks the pod deleted with its grace period, as kubectl
		// drain evicts it, before it stops it (then removes it with grace
		// 0): its routers see it leave.
		w, err := core.Pods("default").Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=last"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		cancel()
		select {
		case err := <-done:
			done <- err // for the cleanup
		case <-time.After(time.Minute):
			t.Fatal("Run did not return")
		}
		if _, err := core.Pods("default").Get(t.Context(), "last", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("pod last after the node stopped: %v, want NotFound", err)
		}
		markedDeleted := false
	events:
		for {
			select {
			case ev := <-w.ResultChan():
				if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type != "DELETED" && p.DeletionTimestamp != nil &&
					p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds > 0 {
					markedDeleted = true
				}
				if ev.Type == "DELETED" {
					break events
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no DELETED event for pod last")
			}
		}
		if !markedDeleted {
			t.Error("pod last was not marked deleted with its grace period before it went")
		}
		for _, pid := range pids {
			if alive(pid) {
				t.Errorf("container process %d still runs", pid)
			}
		}
		n, err := core.Nodes().Get(t.Context(), "node-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if nodeReady(n) != corev1.ConditionFalse {
			t.Errorf("node-1 Ready %s after it stopped, want False", nodeReady(n))
		}
	})
}

// toggle sends a toggle request to the test app of a pod.
func toggle(t *testing.T, podIP, path string) {
	t.Helper()
	resp, err := http.Get("http://" + podIP + ":8080" + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", path, resp.Status)
	}
}

// startNodeHelper runs a node in a process of its own (this test binary)
// and returns once it runs its pods.
func startNodeHelper(t *testing.T, hc helperConfig) *exec.Cmd {
	t.Helper()
	b, _ := json.Marshal(hc)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), nodeHelperEnv+"="+string(b))
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s's log:\n%s", hc.NodeName, stderr.String())
		}
	})
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil && strings.TrimSpace(line) != "ready" {
			err = fmt.Errorf("printed %q", line)
		}
		ready <- err
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("node %s: %v\n%s", hc.NodeName, err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("node %s not ready within a minute\n%s", hc.NodeName, stderr.String())
	}
	return cmd
}

func TestConfigIsChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no node name", Config{Kubeconfig: "k"}, "node name: required"},
		{"a node name that is no DNS subdomain", Config{Kubeconfig: "k", NodeName: "Node_1"}, `node name "Node_1"`},
		{"no credential", Config{NodeName: "n1"}, "kubeconfig: required"},
		{"a pod range off loopback", Config{Kubeconfig: "k", NodeName: "n1", PodCIDR: "10.0.0.0/24"}, "inside 127.0.0.0/8"},
		{"a kubeconfig that does not exist", Config{Kubeconfig: "/nonexistent/k", NodeName: "n1"}, "kubeconfig /nonexistent/k"},
		{"a pod range other than the pod network's", Config{Kubeconfig: "k", NodeName: "n1", Network: rangeOnly("10.250.0.0/24"), PodCIDR: "10.250.1.0/24", NodeIP: "10.250.0.1"},
			"pod CIDR 10.250.1.0/24: the pod network's range is 10.250.0.0/24"},
		{"a pod network without the node's address", Config{Kubeconfig: "k", NodeName: "n1", Network: rangeOnly("10.250.0.0/24")}, "node IP \"\": required with a pod network"},
		{"an API server for pods without a port", Config{Kubeconfig: "k", NodeName: "n1", APIServerForPods: "10.0.0.1"}, `API server for pods "10.0.0.1": want HOST:PORT`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Run(t.Context(), tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// rangeOnly is a pod network as far as the configuration check sees one:
// its range. It gives no pod a network (the check fails before any).
type rangeOnly string

func (r rangeOnly) Add(string) (node.PodNet, error) { return nil, errors.New("not for pods") }
func (r rangeOnly) Capacity() (int, netip.Prefix)   { return 253, netip.MustParsePrefix(string(r)) }

// The kubelet version the node reports is the one of the Kubernetes API
// podgate is built against: go.mod's k8s.io/api v0.X.Y is Kubernetes
// v1.X.Y.
func TestKubeletVersionFollowsTheAPIModule(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mod), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "k8s.io/api v0."); ok {
			want := "v1." + strings.Fields(v)[0] + "+podgate"
			if KubeletVersion != want {
				t.Errorf("KubeletVersion = %s; go.mod's k8s.io/api makes it %s", KubeletVersion, want)
			}
			return
		}
	}
	t.Fatal("go.mod requires no k8s.io/api")
}

// flakyForwarder forwards the TCP connections of a loopback port of its
// own to target, except the first drop ones, which it closes at once. It
// returns its address.
func flakyForwarder(t *testing.T, target string, drop int) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if n < drop {
				c.Close()
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			track(c)
			track(up)
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(up, c); _ = up.(*net.TCPConn).CloseWrite() }()
			go func() { defer wg.Done(); _, _ = io.Copy(c, up); _ = c.(*net.TCPConn).CloseWrite() }()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}

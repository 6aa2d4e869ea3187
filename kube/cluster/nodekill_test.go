package cluster

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/podgate/podgate/kube/controlplane"
	"github.com/podgate/podgate/node/images"
	"github.com/podgate/podgate/node/netns"
	"github.com/podgate/podgate/test/syncbuf"
)

// nodeMonitorGracePeriod is how long the node-lifecycle controller of this
// test's controller manager waits for a node's heartbeat before it marks
// the node's Ready Unknown (Kubernetes' default is 50 s); the node renews
// its Lease every quarter of its 8 s duration, well inside it.
const (
	nodeMonitorGracePeriod = 12 * time.Second
	testLeaseSeconds       = "8"
)

// nodeNetns is a network namespace of the test's, standing for the
// machine a node runs on: lo up, and the API server reachable at
// 127.0.0.1 inside it through a forward to the control plane on the
// host's loopback. A sleeping process holds it.
type nodeNetns struct {
	ns     *netns.Netns
	holder *exec.Cmd
	api    string // the API server's address inside
}

func newNodeNetns(t *testing.T, apiServer string) *nodeNetns {
	t.Helper()
	holder := exec.Command("sleep", "3600")
	if err := netns.StartInNewNetns(holder); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	ns, err := netns.NetnsOf(holder.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	if err := ns.Do(func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		return netlink.LinkSetUp(lo)
	}); err != nil {
		t.Fatalf("lo up in the node's namespace: %v", err)
	}
	ln, err := ns.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	forwarded := make(chan error, 1)
	go func() { forwarded <- netns.Forward(ctx, ln, apiServer) }()
	t.Cleanup(func() { cancel(); <-forwarded })
	return &nodeNetns{ns: ns, holder: holder, api: ln.Addr().String()}
}

// veths lists the host-side veths of pods in the node's namespace: one
// goes when its pod's namespace is destroyed.
func (n *nodeNetns) veths(t *testing.T) []string {
	t.Helper()
	var out []string
	if err := n.ns.Do(func() error {
		links, err := netlink.LinkList()
		for _, l := range links {
			if strings.HasPrefix(l.Attrs().Name, "pgv") {
				out = append(out, l.Attrs().Name)
			}
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// descendants are pid's live descendants, with their start times.
func descendants(pid int) map[int]uint64 {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 {
			ppid, _ := strconv.Atoi(f[1])
			children[ppid] = append(children[ppid], p)
		}
	}
	out := map[int]uint64{}
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			if st, err := readStat(c); err == nil && st.state != 'Z' {
				out[c] = st.startTime
			}
			walk(c)
		}
	}
	walk(pid)
	return out
}

// stillRunning are the processes of procs that run (the same process: its
// start time unchanged).
func stillRunning(procs map[int]uint64) []int {
	var out []int
	for pid, start := range procs {
		if st, err := readStat(pid); err == nil && st.state != 'Z' && st.startTime == start {
			out = append(out, pid)
		}
	}
	return out
}

// TestSIGKILLedNodeLeavesNothingAndGoesNotReady runs `podgate node` as a
// real process with pod network namespaces (in a network namespace of the
// test's, as a machine of its own) against a real control plane,
// SIGKILLs it while it runs a pod, and checks what a node's crash must
// leave: no container process, no pod network namespace (its veth is
// gone), and a Node the node-lifecycle controller marks NotReady.
func TestSIGKILLedNodeLeavesNothingAndGoesNotReady(t *testing.T) {
	cp, err := controlplane.Start(t.Context(), controlplane.Options{
		Dir: t.TempDir(),
		ExtraArgs: map[string][]string{controlplane.KubeControllerManager: {
			"--node-monitor-grace-period=" + nodeMonitorGracePeriod.String(), "--node-monitor-period=1s",
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	client := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	apiURL, err := url.Parse(cp.URL())
	if err != nil {
		t.Fatal(err)
	}
	nn := newNodeNetns(t, apiURL.Host)
	kubeconfig := nodeKubeconfigAt(t, cp, "crashing", nn.api)

	var stdout, stderr syncbuf.Buffer
	node := exec.Command(podgateBin, "node", "--kubeconfig", kubeconfig, "--name", "crashing",
		"--pod-network", "netns", "--pod-cidr", "10.250.6.0/24", "--node-lease-duration-seconds", testLeaseSeconds,
		"--pods-dir", t.TempDir())
	node.Stdout, node.Stderr = &stdout, &stderr
	if err := nn.ns.Start(node); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- node.Wait() }()
	t.Cleanup(func() {
		_ = node.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("podgate node's stderr:\n%s", stderr.String())
		}
	})

	eventually(t, waitLimit, "node crashing Ready", func() (bool, string) {
		n, err := client.CoreV1().Nodes().Get(t.Context(), "crashing", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		r := nodeCondition(n, corev1.NodeReady)
		return r != nil && r.Status == corev1.ConditionTrue, fmt.Sprintf("Ready %+v", r)
	})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      "crashing",
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			Containers: []corev1.Container{{
				Name: "app", Image: images.TestappImage, Args: []string{"--port", "8080"},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
	if _, err := client.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var podIP string
	eventually(t, waitLimit, "pod victim Ready", func() (bool, string) {
		p, err := client.CoreV1().Pods("default").Get(t.Context(), "victim", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		podIP = p.Status.PodIP
		ok, why := ready(p)
		return ok, why + ", IP " + podIP
	})
	if !strings.HasPrefix(podIP, "10.250.6.") {
		t.Errorf("pod IP %s, want one of 10.250.6.0/24", podIP)
	}
	procs := descendants(node.Process.Pid)
	procs[node.Process.Pid] = 0
	if st, err := readStat(node.Process.Pid); err == nil {
		procs[node.Process.Pid] = st.startTime
	}
	var appPid int
	for pid := range procs {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.HasPrefix(string(b), podgateBin+"\x00testapp\x00") {
			appPid = pid
		}
	}
	if appPid == 0 {
		t.Fatalf("no test app among the node's processes %v", describe(mapKeys(procs)))
	}
	var podNs syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", appPid), &podNs); err != nil {
		t.Fatal(err)
	}
	if podNs.Ino == nn.ns.Inode() {
		t.Fatal("the container runs in the node's namespace, not a pod's")
	}
	if v := nn.veths(t); len(v) != 1 {
		t.Fatalf("pod veths in the node's namespace: %v, want one", v)
	}

	killedAt, killedTicks := time.Now(), uptimeTicks(t)
	if err := node.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("podgate node exited with %v, want killed", err)
	}
	exited <- nil // for the cleanup

	eventually(t, time.Minute, "no process of the node left", func() (bool, string) {
		left := stillRunning(procs)
		return len(left) == 0, fmt.Sprint(describe(left))
	})
	t.Logf("every process of the node gone %s after SIGKILL", time.Since(killedAt).Round(time.Millisecond))
	// The kernel deletes a veth pair when either end's namespace goes: the
	// pod's namespace is destroyed.
	eventually(t, time.Minute, "the pod's network namespace destroyed (its veth gone)", func() (bool, string) {
		v := nn.veths(t)
		return len(v) == 0, fmt.Sprint(v)
	})
	// A namespace's inode may be reused once it is gone: only a process
	// started before the kill could be the node's.
	if left := startedBefore(NetnsHolders(podNs.Ino), killedTicks); len(left) > 0 {
		t.Errorf("processes in the pod's network namespace %d: %v", podNs.Ino, describe(left))
	}
	eventually(t, waitLimit, "node crashing NotReady", func() (bool, string) {
		n, err := client.CoreV1().Nodes().Get(t.Context(), "crashing", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		r := nodeCondition(n, corev1.NodeReady)
		return r != nil && r.Status == corev1.ConditionUnknown && r.Reason == "NodeStatusUnknown", fmt.Sprintf("Ready %+v", r)
	})
	t.Logf("node NotReady (Ready Unknown) %s after SIGKILL, with --node-monitor-grace-period=%s", time.Since(killedAt).Round(time.Millisecond), nodeMonitorGracePeriod)
}

// nodeKubeconfigAt is node name's kubeconfig with server addr (the API
// server as the node's namespace reaches it).
func nodeKubeconfigAt(t *testing.T, cp *controlplane.ControlPlane, name, addr string) string {
	t.Helper()
	path, err := cp.NodeKubeconfig(name)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range kc.Clusters {
		c.Server = "https://" + addr
	}
	out := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func nodeCondition(n *corev1.Node, typ corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == typ {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// startedBefore keeps the processes that started before uptime ticks
// (and never this test's own).
func startedBefore(pids []int, ticks uint64) []int {
	var out []int
	for _, pid := range pids {
		st, err := readStat(pid)
		if err == nil && pid != os.Getpid() && st.startTime < ticks {
			out = append(out, pid)
		}
	}
	return out
}

// uptimeTicks is the time since boot in clock ticks (USER_HZ, 100 on
// every Linux architecture Go supports), the unit of a process's start
// time in /proc/PID/stat.
func uptimeTicks(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Fatal(err)
	}
	secs, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	if err != nil {
		t.Fatal(err)
	}
	return uint64(secs * 100)
}

func mapKeys(m map[int]uint64) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

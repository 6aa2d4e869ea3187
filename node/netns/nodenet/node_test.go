//go:build linux

package nodenet_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/admission/validation"
	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/local/controllers"
	"github.com/podgate/podgate/local/objstore"
	"github.com/podgate/podgate/local/preflight"
	"github.com/podgate/podgate/node"
	"github.com/podgate/podgate/node/netns"
	"github.com/podgate/podgate/node/netns/nodenet"
	"github.com/podgate/podgate/test/syncbuf"
)

// waitLimit bounds every wait of a node: generous, for a loaded 2-core
// machine; a passing test never waits this long.
const waitLimit = 90 * time.Second

// testNode is a node on a pod network, inside the child's namespace: the
// cluster network, a node.Agent on it through the adapter, and the
// local control plane runtime's own tests use (the store, the API's pod
// deletion, the workload and EndpointSlice controllers).
type testNode struct {
	cluster   *netns.Cluster
	net       node.PodNetwork
	agent     *node.Agent
	store     *objstore.Store
	pods      *controllers.Pods
	workloads *controllers.Workloads
	endpoints *controllers.Endpoints
	out, logs *syncbuf.Buffer
}

// startNode sets the cluster network up in this (new) namespace and runs
// the manifest's workloads on it. wrap, if set, stands between the
// adapter and the agent.
func startNode(cidr, manifest string, wrap func(node.PodNetwork) node.PodNetwork) (*testNode, error) {
	return startNodeWith(cidr, func() string { return manifest }, wrap, nil)
}

// startNodeWith is startNode with more options: configure, if set, sets
// them once the cluster network is up; the manifest is made after it.
func startNodeWith(cidr string, manifest func() string, wrap func(node.PodNetwork) node.PodNetwork, configure func(*netns.Cluster, *node.Options) error) (*testNode, error) {
	c, err := netns.SetupCluster(cidr)
	if err != nil {
		return nil, err
	}
	n := &testNode{cluster: c, store: objstore.New(objstore.Options{}), out: &syncbuf.Buffer{}, logs: &syncbuf.Buffer{}}
	adapter := nodenet.New(c)
	n.net = adapter
	if wrap != nil {
		n.net = wrap(adapter)
	}
	n.pods = controllers.NewPods(n.store, nil)
	opts := node.Options{
		Events: controllers.NewEvents(n.store), Pods: n.pods, Source: n.pods,
		Network: n.net, HostIP: adapter.HostIP(),
		Output: n.out, Logger: slog.New(slog.NewTextHandler(n.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		NodeName: "node-a",
	}
	if configure != nil {
		if err := configure(c, &opts); err != nil {
			return nil, errors.Join(err, c.Close())
		}
	}
	n.agent, err = node.New(opts)
	if err != nil {
		return nil, errors.Join(err, c.Close())
	}
	if err := n.run(manifest()); err != nil {
		return nil, errors.Join(err, n.stop())
	}
	return n, nil
}

// run checks the workloads as the node would, then starts the EndpointSlice
// controller and the workload controller, which creates the pods.
func (n *testNode) run(manifest string) error {
	m, err := workload.Load(strings.NewReader(manifest), "test.yaml")
	if err != nil {
		return err
	}
	for _, w := range m.Workloads {
		if errs := validation.Validate(w); len(errs) > 0 {
			return fmt.Errorf("validate %s: %w", w.ID(), errs.ToAggregate())
		}
	}
	if err := preflight.Check(m.Workloads, preflight.OnNode(n.agent, nil)); err != nil {
		return err
	}
	n.endpoints, err = controllers.NewEndpoints(controllers.EndpointsConfig{Store: n.store, Workloads: m.Workloads})
	if err != nil {
		return err
	}
	n.pods.SetWritten(n.endpoints.PodWritten)
	if err := n.endpoints.Start(); err != nil {
		return err
	}
	n.workloads, err = controllers.NewWorkloads(controllers.WorkloadsConfig{Store: n.store, Workloads: m.Workloads, NodeName: n.agent.NodeName()})
	if err != nil {
		return err
	}
	return n.workloads.Start()
}

// stop stops the controllers (no replacement pods), the agent (its pods
// gracefully) and removes the cluster network.
func (n *testNode) stop() error {
	if n.workloads != nil {
		n.workloads.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	err := n.agent.Shutdown(ctx)
	if n.endpoints != nil {
		n.endpoints.Stop()
	}
	return errors.Join(err, n.cluster.Close())
}

// fail adds what the node printed and logged to err.
func (n *testNode) fail(err error) error {
	return fmt.Errorf("%w\ncontainer output:\n%s\nagent log:\n%s", err, n.out.String(), n.logs.String())
}

// finish stops the node; err (the role's verdict) comes first.
func (n *testNode) finish(err error) error {
	if serr := n.stop(); serr != nil {
		err = errors.Join(err, fmt.Errorf("stop the node: %w", serr))
	}
	if err != nil {
		return n.fail(err)
	}
	return nil
}

// poll calls cond until it is true or waitLimit passes; what describes
// the wait in the error.
func poll(what string, cond func() (bool, string)) error {
	deadline := time.Now().Add(waitLimit)
	for {
		ok, last := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not %s within %s; last: %s", what, waitLimit, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readyPods waits until want pods whose names start with prefix are
// Ready, and returns them.
func (n *testNode) readyPods(prefix string, want int) ([]*corev1.Pod, error) {
	var ready []*corev1.Pod
	err := poll(fmt.Sprintf("%d pod(s) %s* Ready", want, prefix), func() (bool, string) {
		ready = nil
		all, _ := n.store.Pods.List("default")
		var seen []string
		for _, p := range all {
			if !strings.HasPrefix(p.Name, prefix) || p.DeletionTimestamp != nil {
				continue
			}
			seen = append(seen, describe(p))
			if podReady(p) {
				ready = append(ready, p)
			}
		}
		return len(ready) == want, strings.Join(seen, "; ")
	})
	return ready, err
}

// waitPod waits until the pod satisfies cond.
func (n *testNode) waitPod(name, what string, cond func(*corev1.Pod) bool) (*corev1.Pod, error) {
	var got *corev1.Pod
	err := poll("pod "+name+" "+what, func() (bool, string) {
		p, err := n.store.Pods.Get("default", name)
		if err != nil {
			return false, err.Error()
		}
		got = p
		return cond(p), describe(p)
	})
	return got, err
}

// waitGone waits until the pod is no longer in the store.
func (n *testNode) waitGone(name string) error {
	return poll("pod "+name+" removed", func() (bool, string) {
		p, err := n.store.Pods.Get("default", name)
		if err != nil {
			return true, ""
		}
		return false, describe(p)
	})
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func restarts(p *corev1.Pod, container string) int32 {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container {
			return cs.RestartCount
		}
	}
	return 0
}

func describe(p *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s phase=%s podIP=%s", p.Name, p.Status.Phase, p.Status.PodIP)
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s", c.Type, c.Status)
	}
	for _, cs := range p.Status.ContainerStatuses {
		fmt.Fprintf(&b, " [%s ready=%v restarts=%d]", cs.Name, cs.Ready, cs.RestartCount)
	}
	return b.String()
}

// record is one line netcheck appended: who ran where.
type record struct {
	pid   int
	netns string
}

// readRecords reads a netcheck -record file.
func readRecords(path string) ([]record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []record
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		pid, ns, ok := strings.Cut(line, " ")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil {
			return nil, fmt.Errorf("%s: bad line %q", path, line)
		}
		out = append(out, record{n, ns})
	}
	return out, nil
}

// waitRecords waits until path has at least n records.
func waitRecords(path string, n int) ([]record, error) {
	var recs []record
	err := poll(fmt.Sprintf("%d record(s) in %s", n, filepath.Base(path)), func() (bool, string) {
		var err error
		recs, err = readRecords(path)
		if err != nil {
			return false, err.Error()
		}
		return len(recs) >= n, fmt.Sprint(recs)
	})
	return recs, err
}

// allIn checks that every record names netns.
func allIn(what string, recs []record, netns string) error {
	for _, r := range recs {
		if r.netns != netns {
			return fmt.Errorf("%s (pid %d) ran in %s, want the pod's %s", what, r.pid, r.netns, netns)
		}
	}
	return nil
}

// clusterNetns is this process's namespace, the cluster's (the main
// thread's; it is locked there and never enters a pod's).
func clusterNetns() (string, error) { return os.Readlink("/proc/self/ns/net") }

// netnsHolders lists what keeps netns ("net:[N]") alive that /proc
// shows: threads inside it and open descriptors of it.
func netnsHolders(netns string) []string {
	var holders []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		links, _ := filepath.Glob(p + "/task/*/ns/net")
		fds, _ := filepath.Glob(p + "/fd/*")
		for _, l := range append(links, fds...) {
			if target, err := os.Readlink(l); err == nil && target == netns {
				holders = append(holders, l)
			}
		}
	}
	return holders
}

// veths lists the host-side veths in this (the cluster's) namespace.
func veths() ([]string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, i := range ifs {
		if strings.HasPrefix(i.Name, "pgv") {
			out = append(out, i.Name)
		}
	}
	return out, nil
}

// checkPodIPs checks a pod's addresses: its own IP in cidr, and the
// gateway as status.hostIP.
func checkPodIPs(p *corev1.Pod, cidr netip.Prefix, gw netip.Addr) (netip.Addr, error) {
	ip, err := netip.ParseAddr(p.Status.PodIP)
	switch {
	case err != nil:
		return ip, fmt.Errorf("pod %s: status.podIP: %w", p.Name, err)
	case !cidr.Contains(ip) || ip == gw:
		return ip, fmt.Errorf("pod %s: status.podIP %s, want a pod address of %s", p.Name, ip, cidr)
	case len(p.Status.PodIPs) != 1 || p.Status.PodIPs[0].IP != ip.String():
		return ip, fmt.Errorf("pod %s: status.podIPs %v, want [%s]", p.Name, p.Status.PodIPs, ip)
	case p.Status.HostIP != gw.String() || len(p.Status.HostIPs) != 1 || p.Status.HostIPs[0].IP != gw.String():
		return ip, fmt.Errorf("pod %s: status.hostIP %q hostIPs %v, want the node's %s", p.Name, p.Status.HostIP, p.Status.HostIPs, gw)
	}
	return ip, nil
}

//go:build linux

package nodenet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/node"
	"github.com/podgate/podgate/node/events"
	"github.com/podgate/podgate/node/netns"
)

// roles are what the child does in its new namespace, by childEnv. Each
// gets the pod CIDR and a scratch directory shared with the parent.
var roles = map[string]func(cidr, dir string) error{
	"replicas":  replicasRole,
	"readiness": readinessRole,
	"liveness":  livenessRole,
	"prestop":   preStopRole,
	"stranded":  strandedRole,
	"hold":      holdRole,
	"dns":       dnsRole,
	"hostnet":   hostNetRole,
	"volumes":   volumesRole,
}

// self is this binary, the containers' program.
func self() string {
	p, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return p
}

// netcheckApp is a container command: netcheck records where it runs
// into dir/container, then becomes the test app on 8080 with extra
// flags.
func netcheckApp(dir string, extra ...string) string {
	argv := append([]string{self(), "netcheck", "-record", filepath.Join(dir, "container"), "--", "testapp", "--port", "8080"}, extra...)
	return yamlList(argv)
}

// yamlList writes argv as a YAML flow sequence (Go's quoting is JSON's
// for these strings, and JSON is YAML).
func yamlList(argv []string) string {
	b, _ := json.Marshal(argv)
	return string(b)
}

func podYAML(name, body string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
%s`, name, body)
}

const replicasYAML = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: ghcr.io/podgate/testapp
        args: ["--port", "8080"]
        ports: [{containerPort: 8080}]
        readinessProbe:
          httpGet: {path: /readyz, port: 8080}
          periodSeconds: 1
      - name: env
        image: busybox
        command: ["/bin/sh", "-c", "echo \"POD_IP=$POD_IP podIP=$MY_POD_IP hostIP=$MY_HOST_IP\"; exec sleep 600"]
        env:
        - name: MY_POD_IP
          valueFrom: {fieldRef: {fieldPath: status.podIP}}
        - name: MY_HOST_IP
          valueFrom: {fieldRef: {fieldPath: status.hostIP}}
`

// replicasRole: two replicas of a Deployment both bind 0.0.0.0:8080 (the
// test app does, its $POD_IP not being loopback), each answers at its own
// pod IP, and the pod IP and the node's address are what status, $POD_IP,
// the downward API and the EndpointSlice say.
func replicasRole(cidr, _ string) error {
	n, err := startNode(cidr, replicasYAML, nil)
	if err != nil {
		return err
	}
	return n.finish(n.checkReplicas())
}

func (n *testNode) checkReplicas() error {
	pods, err := n.readyPods("web-", 2)
	if err != nil {
		return err
	}
	gw := n.cluster.Gateway()
	var ips []string
	for _, p := range pods {
		ip, err := checkPodIPs(p, n.cluster.CIDR(), gw)
		if err != nil {
			return err
		}
		if slices.Contains(ips, ip.String()) {
			return fmt.Errorf("two pods have %s", ip)
		}
		ips = append(ips, ip.String())
		code, body, err := httpGet("http://" + ip.String() + ":8080/")
		if err != nil || code != 200 || body != p.Name+"\n" {
			return fmt.Errorf("GET %s:8080 = %d %q (%v), want pod %s's name", ip, code, body, err, p.Name)
		}
		want := fmt.Sprintf("%s/env | POD_IP=%s podIP=%s hostIP=%s\n", p.Name, ip, ip, gw)
		if err := poll("env printed", func() (bool, string) { return strings.Contains(n.out.String(), want), want }); err != nil {
			return err
		}
	}
	slices.Sort(ips)
	err = poll("EndpointSlice web with both pod IPs ready", func() (bool, string) {
		s, err := n.store.EndpointSlices.Get("default", "web")
		if err != nil {
			return false, err.Error()
		}
		var ready []string
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready {
				ready = append(ready, e.Addresses...)
			}
		}
		slices.Sort(ready)
		return slices.Equal(ready, ips), fmt.Sprint(ready)
	})
	if err != nil {
		return err
	}
	// A /16 without its network, node and broadcast addresses.
	if size, c := n.net.Capacity(); size != 1<<16-3 || c != n.cluster.CIDR() {
		return fmt.Errorf("Capacity() = %d, %s; want %d, %s", size, c, 1<<16-3, n.cluster.CIDR())
	}
	return nil
}

// podNetns waits for the container's first netcheck record and checks
// that it is a namespace of its own, not the cluster's.
func podNetns(dir string) (record, error) {
	recs, err := waitRecords(filepath.Join(dir, "container"), 1)
	if err != nil {
		return record{}, err
	}
	cluster, err := clusterNetns()
	if err != nil {
		return record{}, err
	}
	if recs[0].netns == cluster {
		return record{}, fmt.Errorf("the container runs in the cluster's namespace %s", cluster)
	}
	return recs[0], nil
}

// readinessRole: an exec readiness probe runs inside the pod's namespace
// (netcheck fails anywhere else, and it reaches the app at 127.0.0.1,
// the pod's own loopback), and the pod goes Ready on it.
func readinessRole(cidr, dir string) error {
	probe := yamlList([]string{self(), "netcheck", "-record", filepath.Join(dir, "readiness"), "-get", "http://127.0.0.1:8080/"})
	n, err := startNode(cidr, podYAML("probed", fmt.Sprintf(`  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    command: %s
    readinessProbe:
      exec: {command: %s}
      periodSeconds: 1
      timeoutSeconds: 10
`, netcheckApp(dir), probe)), nil)
	if err != nil {
		return err
	}
	return n.finish(func() error {
		if _, err := n.readyPods("probed", 1); err != nil {
			return err
		}
		c, err := podNetns(dir)
		if err != nil {
			return err
		}
		recs, err := waitRecords(filepath.Join(dir, "readiness"), 1)
		if err != nil {
			return err
		}
		return allIn("the readiness probe", recs, c.netns)
	}())
}

// livenessRole: a failing exec liveness probe (run inside the pod, like
// every exec probe) restarts the container, and the new instance starts
// in the same namespace with the same IP.
func livenessRole(cidr, dir string) error {
	// The app creates its exec file when it starts; made here first, the
	// first probe finds it however fast it comes. After the restart, the
	// failure threshold leaves the new instance time to make it.
	healthy := filepath.Join(dir, "healthy")
	if err := os.WriteFile(healthy, nil, 0o644); err != nil {
		return err
	}
	probe := yamlList([]string{self(), "netcheck", "-record", filepath.Join(dir, "liveness"), "-require", healthy})
	n, err := startNode(cidr, podYAML("lively", fmt.Sprintf(`  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    command: %s
    readinessProbe:
      httpGet: {path: /readyz, port: 8080}
      periodSeconds: 1
    livenessProbe:
      exec: {command: %s}
      periodSeconds: 1
      timeoutSeconds: 10
      failureThreshold: 3
`, netcheckApp(dir, "--exec-file", healthy), probe)), nil)
	if err != nil {
		return err
	}
	return n.finish(n.checkLiveness(dir))
}

func (n *testNode) checkLiveness(dir string) error {
	pods, err := n.readyPods("lively", 1)
	if err != nil {
		return err
	}
	ip := pods[0].Status.PodIP
	first, err := podNetns(dir)
	if err != nil {
		return err
	}
	// From the node to the pod IP: the app removes its exec file.
	if code, body, err := httpGet("http://" + ip + ":8080/toggleExec?set=false"); err != nil || code != 200 {
		return fmt.Errorf("toggleExec: %d %q %v", code, body, err)
	}
	p, err := n.waitPod("lively", "restarted and Ready", func(p *corev1.Pod) bool { return restarts(p, "app") >= 1 && podReady(p) })
	if err != nil {
		return err
	}
	if p.Status.PodIP != ip {
		return fmt.Errorf("podIP %s after the restart, was %s", p.Status.PodIP, ip)
	}
	recs, err := waitRecords(filepath.Join(dir, "container"), 2)
	if err != nil {
		return err
	}
	if recs[1].pid == first.pid {
		return fmt.Errorf("the restarted container has the first one's pid %d", first.pid)
	}
	if err := allIn("the container", recs, first.netns); err != nil {
		return err
	}
	probes, err := readRecords(filepath.Join(dir, "liveness"))
	if err != nil {
		return err
	}
	return allIn("the liveness probe", probes, first.netns)
}

// preStopRole: an exec preStop hook runs inside the pod's namespace, and
// once the deleted pod is gone so are its namespace and veth.
func preStopRole(cidr, dir string) error {
	hook := yamlList([]string{self(), "netcheck", "-record", filepath.Join(dir, "prestop")})
	n, err := startNode(cidr, podYAML("stopping", fmt.Sprintf(`  terminationGracePeriodSeconds: 30
  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    command: %s
    readinessProbe:
      httpGet: {path: /readyz, port: 8080}
      periodSeconds: 1
    lifecycle:
      preStop:
        exec: {command: %s}
`, netcheckApp(dir), hook)), nil)
	if err != nil {
		return err
	}
	return n.finish(n.checkPreStop(dir))
}

func (n *testNode) checkPreStop(dir string) error {
	if _, err := n.readyPods("stopping", 1); err != nil {
		return err
	}
	c, err := podNetns(dir)
	if err != nil {
		return err
	}
	// The scans below must see the pod's namespace and veth while they
	// live, or their "gone" would mean nothing.
	if vs, err := veths(); err != nil || len(vs) != 1 {
		return fmt.Errorf("veths while the pod runs: %v (%v), want one", vs, err)
	}
	if len(netnsHolders(c.netns)) == 0 {
		return fmt.Errorf("the pod's namespace %s has no holder in /proc while it runs", c.netns)
	}
	if err := n.pods.DeletePod(context.Background(), "default", "stopping", metav1.DeleteOptions{}); err != nil {
		return err
	}
	if err := n.waitGone("stopping"); err != nil {
		return err
	}
	recs, err := readRecords(filepath.Join(dir, "prestop"))
	if err != nil {
		return fmt.Errorf("the preStop hook: %w", err)
	}
	if err := allIn("the preStop hook", recs, c.netns); err != nil {
		return err
	}
	return poll("the pod's namespace and veth gone", func() (bool, string) {
		vs, err := veths()
		left := append(netnsHolders(c.netns), vs...)
		return err == nil && len(left) == 0, fmt.Sprint(left, err)
	})
}

// stranding is a pod network whose Enter cannot take the thread back:
// inside the pod's namespace the thread drops CAP_SYS_ADMIN, so setns
// back is refused (netns.ErrNetnsNotRestored).
type stranding struct{ node.PodNetwork }

func (s stranding) Add(key string) (node.PodNet, error) {
	p, err := s.PodNetwork.Add(key)
	return strandingPod{p}, err
}

type strandingPod struct{ node.PodNet }

func (p strandingPod) Enter(fn func() error) error {
	return p.PodNet.Enter(func() error {
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			return err
		}
		data[0].Effective &^= 1 << unix.CAP_SYS_ADMIN
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return err
		}
		return fn()
	})
}

// strandedRole: when the way back from a pod's namespace fails on the
// agent's spawner thread, the container does not start, the event names
// why, and the agent still shuts down, ending that thread.
func strandedRole(cidr, _ string) error {
	n, err := startNode(cidr, podYAML("stranded", `  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    args: ["--port", "8080"]
`), func(pn node.PodNetwork) node.PodNetwork { return stranding{pn} })
	if err != nil {
		return err
	}
	err = poll("a Failed event naming the stopped spawner", func() (bool, string) {
		evs, _ := n.store.Events.List("default")
		var seen []string
		for _, e := range evs {
			if e.Reason == events.ReasonFailed && strings.Contains(e.Message, "process spawner stopped") &&
				strings.Contains(e.Message, "could not return to its network namespace") {
				return true, ""
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, strings.Join(seen, "; ")
	})
	if err := n.finish(err); err != nil {
		return err
	}
	cluster, err := clusterNetns()
	if err != nil {
		return err
	}
	return poll("every thread back in the cluster's namespace", func() (bool, string) {
		var away []string
		tasks, _ := filepath.Glob("/proc/self/task/*/ns/net")
		for _, task := range tasks {
			if ns, err := os.Readlink(task); err == nil && ns != cluster {
				away = append(away, task+" in "+ns)
			}
		}
		return len(away) == 0, fmt.Sprint(away)
	})
}

// held is what holdRole reports once its pod is Ready.
type held struct {
	Pid     int    `json:"pid"`
	Pod     string `json:"pod"`
	Cluster string `json:"cluster"`
}

// holdRole runs a pod, reports its container's pid and the namespaces,
// and waits to be killed (or for stdin to close).
func holdRole(cidr, dir string) error {
	n, err := startNodeWith(cidr, func() string {
		return podYAML("held", fmt.Sprintf(`  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    command: %s
    readinessProbe:
      httpGet: {path: /readyz, port: 8080}
      periodSeconds: 1
`, netcheckApp(dir)))
	}, nil, func(_ *netns.Cluster, o *node.Options) error {
		// The test's: this node is killed, and leaves its pods' files.
		o.PodsDir = filepath.Join(dir, "pods")
		return nil
	})
	if err != nil {
		return err
	}
	err = func() error {
		if _, err := n.readyPods("held", 1); err != nil {
			return err
		}
		c, err := podNetns(dir)
		if err != nil {
			return err
		}
		cluster, err := clusterNetns()
		if err != nil {
			return err
		}
		b, _ := json.Marshal(held{Pid: c.pid, Pod: c.netns, Cluster: cluster})
		fmt.Println(string(b))
		_, err = io.Copy(io.Discard, os.Stdin)
		return err
	}()
	return n.finish(err)
}

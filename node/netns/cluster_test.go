//go:build linux

package netns

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Each test gets a pod CIDR of its own (they are in separate namespaces
// anyway; distinct CIDRs keep their output apart).
func TestPodNetworks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, role, cidr string
	}{
		{"two pods bind the same port and the node reaches each at its IP", "two-pods", "10.244.0.0/16"},
		{"pods reach the node's address and each other; sockets made in Do belong to the pod", "reach", "10.245.0.0/16"},
		{"closing a pod network removes its veth, frees its address and its namespace", "close", "10.246.0.0/24"},
		{"an exhausted CIDR is named and a failed AddPod leaves no veth", "exhaust", "10.247.0.0/30"},
		{"SetupCluster refuses a namespace with an interface it did not make", "guard", "10.248.0.0/16"},
		{"a thread that cannot return from a pod's namespace is ended, not reused", "stuck", "10.253.0.0/16"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if out := runInNetns(t, tc.role, cidrEnv+"="+tc.cidr); out != "" {
				t.Logf("child said: %s", out)
			}
		})
	}
}

// TestSetupClusterRefusesTheHostNamespace checks the guard read-only: in
// the test process's own namespace (the host's) it must refuse, so
// SetupCluster can never reach the host's links.
func TestSetupClusterRefusesTheHostNamespace(t *testing.T) {
	t.Parallel()
	err := checkOwnNetns()
	if err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("checkOwnNetns in the host's namespace = %v, want a refusal", err)
	}
}

// hostNetwork renders what the tests must never change: the links,
// addresses and routes (every table) of the test process's namespace.
func hostNetwork(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	self, err := openNetns("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "netns %d\n", self.Inode())
	_ = self.Close()
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		a := l.Attrs()
		fmt.Fprintf(&b, "link %d %s %s %v mtu %d master %d\n", a.Index, a.Name, l.Type(), a.Flags, a.MTU, a.MasterIndex)
	}
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		fmt.Fprintf(&b, "addr %d %s\n", a.LinkIndex, a.IPNet)
	}
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: syscall.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	if err != nil {
		t.Fatal(err)
	}
	var rs []string
	for _, r := range routes {
		rs = append(rs, fmt.Sprintf("route table %d dst %v gw %v dev %d proto %d", r.Table, r.Dst, r.Gw, r.LinkIndex, r.Protocol))
	}
	slices.Sort(rs)
	b.WriteString(strings.Join(rs, "\n"))
	return b.String()
}

// held is what holdChild reports once its pods serve.
type held struct {
	Cluster uint64   `json:"cluster"`
	Pods    []uint64 `json:"pods"`
	Servers []int    `json:"servers"`
}

func TestSIGKILLOfTheClusterLeavesNoNamespaceAndTheHostUnchanged(t *testing.T) {
	t.Parallel()
	before := hostNetwork(t)
	c := startLive(t, childCmd("hold", cidrEnv+"=10.249.0.0/16"), true)
	var h held
	if err := json.Unmarshal([]byte(c.line(t)), &h); err != nil {
		t.Fatal(err)
	}
	all := append([]uint64{h.Cluster}, h.Pods...)
	// Who can hold them: the cluster child and its pods' processes.
	holders := append([]int{c.cmd.Process.Pid}, h.Servers...)
	// The scan must see the namespaces while they live, or its "gone"
	// below would mean nothing.
	for _, ino := range all {
		if len(netnsHolders(ino, holders...)) == 0 {
			t.Fatalf("namespace net:[%d] has no holder in /proc while the cluster runs", ino)
		}
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.cmd.Wait()
	c.ended = true
	deadline := time.Now().Add(waitLimit)
	for {
		var left []string
		for _, ino := range all {
			left = append(left, netnsHolders(ino, holders...)...)
		}
		for _, pid := range h.Servers {
			if alive(pid) {
				left = append(left, "pod process "+strconv.Itoa(pid))
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after SIGKILL of the cluster, still there: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if after := hostNetwork(t); after != before {
		t.Errorf("the host's network changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if strings.Contains(before, BridgeName) || strings.Contains(before, " "+vethPrefix) {
		t.Errorf("the host's network has podgate's interfaces:\n%s", before)
	}
}

// alive reports whether pid runs (a zombie waiting for its reaper does
// not: its namespaces are already released).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(s[i+1:], " Z")
}

// ---- the children, in their own network namespace ----

// pod is a pod network with its server, for the children.
type pod struct {
	net    *PodNet
	server *exec.Cmd
}

// startPods sets up the cluster and one serving pod per name.
func startPods(names ...string) (*Cluster, []*pod, error) {
	c, err := SetupCluster(os.Getenv(cidrEnv))
	if err != nil {
		return nil, nil, err
	}
	var pods []*pod
	for _, name := range names {
		p, err := c.AddPod(name)
		if err != nil {
			stopPods(c, pods)
			return nil, nil, err
		}
		cmd := childCmd("serve", nameEnv+"="+name)
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := p.Start(cmd); err != nil {
			_ = p.Close()
			stopPods(c, pods)
			return nil, nil, err
		}
		pods = append(pods, &pod{net: p, server: cmd})
	}
	for _, p := range pods {
		want := fmt.Sprintf("%s from %s", p.net.Key(), c.Gateway())
		if _, err := pollGet("http://"+net.JoinHostPort(p.net.IP().String(), "8080")+"/", want); err != nil {
			stopPods(c, pods)
			return nil, nil, err
		}
	}
	return c, pods, nil
}

func stopPods(c *Cluster, pods []*pod) {
	for _, p := range pods {
		_ = p.server.Process.Kill()
		_ = p.server.Wait()
	}
	_ = c.Close()
}

func twoPodsChild() error {
	c, pods, err := startPods("a", "b")
	if err != nil {
		return err
	}
	defer stopPods(c, pods)
	a, b := pods[0].net, pods[1].net
	if a.IP() == b.IP() || !c.CIDR().Contains(a.IP()) || !c.CIDR().Contains(b.IP()) || a.IP() == c.Gateway() {
		return fmt.Errorf("pod IPs %s and %s: want two distinct addresses of %s other than %s", a.IP(), b.IP(), c.CIDR(), c.Gateway())
	}
	// The bridge kept the MAC it was given (an unset one would have taken
	// the lowest of its ports'), and each eth0's follows its IP.
	br, err := netlink.LinkByName(BridgeName)
	if err != nil {
		return err
	}
	if got, want := br.Attrs().HardwareAddr.String(), macFor(0x47, c.Gateway()).String(); got != want {
		return fmt.Errorf("%s's MAC with two ports: %s, want %s", BridgeName, got, want)
	}
	self, err := openNetns("/proc/self/ns/net")
	if err != nil {
		return err
	}
	defer func() { _ = self.Close() }()
	for _, p := range pods {
		var mac string
		if err := p.net.Do(func() error {
			eth, err := netlink.LinkByName(PodInterface)
			if err == nil {
				mac = eth.Attrs().HardwareAddr.String()
			}
			return err
		}); err != nil {
			return err
		}
		if want := macFor(0x50, p.net.IP()).String(); mac != want {
			return fmt.Errorf("pod %s's %s MAC %s, want %s", p.net.Key(), PodInterface, mac, want)
		}
		// The server runs in the pod's namespace, not the cluster's.
		in, err := NetnsOf(p.server.Process.Pid)
		if err != nil {
			return err
		}
		_ = in.Close()
		if in.Inode() != p.net.Netns().Inode() || in.Inode() == self.Inode() {
			return fmt.Errorf("pod %s's server is in net:[%d], want the pod's net:[%d]", p.net.Key(), in.Inode(), p.net.Netns().Inode())
		}
		// startPods already saw each answer with its own name from the
		// node's address; once more, both at once on the same port.
		body, err := get("http://" + p.net.IP().String() + ":8080/")
		if err != nil || body != p.net.Key()+" from "+c.Gateway().String() {
			return fmt.Errorf("GET pod %s at %s: %q, %v", p.net.Key(), p.net.IP(), body, err)
		}
	}
	return nil
}

func reachChild() error {
	c, pods, err := startPods("a", "b")
	if err != nil {
		return err
	}
	defer stopPods(c, pods)
	a, b := pods[0].net, pods[1].net
	// The node's own listener on its bridge address.
	ln, err := net.Listen("tcp", net.JoinHostPort(c.Gateway().String(), "0"))
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		fmt.Fprintf(w, "node from %s", host)
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	nodeURL := "http://" + ln.Addr().String() + "/"

	// A process started in pod b reaches the node and pod a.
	for _, tc := range []struct{ url, want string }{
		{nodeURL, "node from " + b.IP().String()},
		{"http://" + a.IP().String() + ":8080/", "a from " + b.IP().String()},
	} {
		cmd := childCmd("get", urlEnv+"="+tc.url)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, os.Stderr
		if err := b.Start(cmd); err != nil {
			return err
		}
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("GET %s from pod b: %w", tc.url, err)
		}
		if out.String() != tc.want {
			return fmt.Errorf("GET %s from pod b: %q, want %q", tc.url, out.String(), tc.want)
		}
	}

	// A socket made inside a.Do belongs to pod a, wherever it is used.
	var conn net.Conn
	if err := a.Do(func() error {
		var err error
		conn, err = net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		return err
	}); err != nil {
		return fmt.Errorf("dial the node from pod a: %w", err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(waitLimit)); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(conn, "GET / HTTP/1.0\r\nHost: node\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body strings.Builder
	if _, err := bufio.NewReader(resp.Body).WriteTo(&body); err != nil {
		return err
	}
	if want := "node from " + a.IP().String(); body.String() != want {
		return fmt.Errorf("dial from pod a's Do: %q, want %q", body.String(), want)
	}
	// Every thread went back: none of this process's threads is left in
	// a pod's namespace.
	return allThreadsHome()
}

// allThreadsHome checks that every thread of this process is in the
// process's own (the cluster's) namespace.
func allThreadsHome() error {
	own, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return err
	}
	tasks, err := filepath.Glob("/proc/self/task/*/ns/net")
	if err != nil {
		return err
	}
	for _, task := range tasks {
		if ns, err := os.Readlink(task); err == nil && ns != own {
			return fmt.Errorf("thread %s is in %s, not the cluster's %s", task, ns, own)
		}
	}
	return nil
}

func closeChild() error {
	c, err := SetupCluster(os.Getenv(cidrEnv))
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	p, err := c.AddPod("x")
	if err != nil {
		return err
	}
	ip, veth, ino := p.IP(), p.HostVeth(), p.Netns().Inode()
	if _, err := netlink.LinkByName(veth); err != nil {
		return fmt.Errorf("veth %s after AddPod: %w", veth, err)
	}
	// This process alone can hold it: nothing here starts a process.
	if len(netnsHolders(ino, os.Getpid())) == 0 {
		return fmt.Errorf("pod namespace net:[%d] not held after AddPod", ino)
	}
	if err := p.Close(); err != nil {
		return err
	}
	if err := p.Close(); err != nil {
		return fmt.Errorf("second Close: %w", err)
	}
	if _, err := netlink.LinkByName(veth); !errors.As(err, new(netlink.LinkNotFoundError)) {
		return fmt.Errorf("veth %s after Close: %v, want not found", veth, err)
	}
	if owner := c.ipam.owner(ip); owner != "" {
		return fmt.Errorf("address %s after Close still held by %q", ip, owner)
	}
	if h := netnsHolders(ino, os.Getpid()); len(h) != 0 {
		return fmt.Errorf("pod namespace net:[%d] still held after Close: %v", ino, h)
	}
	if err := p.Do(func() error { return nil }); err == nil {
		return errors.New("Do on a closed pod network succeeded")
	}
	// The key is free again; next-fit gives the next address, not the
	// one just released.
	p2, err := c.AddPod("x")
	if err != nil {
		return err
	}
	if want := fromUint(toUint(ip) + 1); p2.IP() != want {
		return fmt.Errorf("AddPod after Close got %s, want %s", p2.IP(), want)
	}
	if _, err := c.AddPod("x"); err == nil || !strings.Contains(err.Error(), "already has one") {
		return fmt.Errorf("AddPod of a key that has a network: %v", err)
	}
	return nil
}

func exhaustChild() error {
	c, err := SetupCluster(os.Getenv(cidrEnv)) // a /30: one pod
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	if _, err := c.AddPod("only"); err != nil {
		return err
	}
	before, err := netlink.LinkList()
	if err != nil {
		return err
	}
	_, err = c.AddPod("one-too-many")
	if err == nil || !strings.Contains(err.Error(), c.CIDR().String()+" is exhausted") {
		return fmt.Errorf("AddPod beyond the CIDR: %v, want the CIDR named as exhausted", err)
	}
	after, err := netlink.LinkList()
	if err != nil {
		return err
	}
	if len(after) != len(before) {
		return fmt.Errorf("a failed AddPod changed the links: %d before, %d after", len(before), len(after))
	}
	return nil
}

func guardChild() error {
	// An interface up that podgate did not make, as in a host's namespace.
	attrs := netlink.NewLinkAttrs()
	attrs.Name = "stranger0"
	d := &netlink.Veth{LinkAttrs: attrs, PeerName: "stranger1"}
	if err := netlink.LinkAdd(d); err != nil {
		return err
	}
	if err := netlink.LinkSetUp(d); err != nil {
		return err
	}
	_, err := SetupCluster(os.Getenv(cidrEnv))
	if err == nil || !strings.Contains(err.Error(), "stranger0") {
		return fmt.Errorf("SetupCluster beside an interface it did not make: %v, want a refusal naming it", err)
	}
	if _, err := netlink.LinkByName(BridgeName); err == nil {
		return errors.New("the refused SetupCluster created the bridge anyway")
	}
	// Once the stranger is gone the namespace is podgate's; a second
	// cluster in it is refused.
	if err := netlink.LinkDel(d); err != nil {
		return err
	}
	c, err := SetupCluster(os.Getenv(cidrEnv))
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	if _, err := SetupCluster(os.Getenv(cidrEnv)); err == nil {
		return errors.New("a second SetupCluster in one namespace succeeded")
	}
	return nil
}

// stuckChild makes Do's way back fail for real: fn drops CAP_SYS_ADMIN
// from its own thread (capabilities are per thread), so the setns back is
// refused. The thread must stay locked and die with its goroutine. (It
// cannot be the main thread, which Go parks for good instead of ending:
// init locks the main goroutine to it.)
func stuckChild() error {
	c, err := SetupCluster(os.Getenv(cidrEnv))
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	p, err := c.AddPod("stuck")
	if err != nil {
		return err
	}
	type result struct {
		err   error
		where string
	}
	res := make(chan result, 1)
	go func() {
		err := p.Do(func() error {
			hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
			var data [2]unix.CapUserData
			if err := unix.Capget(&hdr, &data[0]); err != nil {
				return err
			}
			data[0].Effective &^= 1 << unix.CAP_SYS_ADMIN
			return unix.Capset(&hdr, &data[0])
		})
		// Still on the same (locked) thread: where is it?
		where, _ := os.Readlink(threadNetns)
		res <- result{err, where}
		// Returning while locked ends the thread.
	}()
	r := <-res
	if !errors.Is(r.err, ErrNetnsNotRestored) {
		return fmt.Errorf("Do whose way back is refused: %v, want ErrNetnsNotRestored", r.err)
	}
	if want := fmt.Sprintf("net:[%d]", p.Netns().Inode()); r.where != want {
		return fmt.Errorf("after the failed way back the thread is in %s, want the pod's %s", r.where, want)
	}
	deadline := time.Now().Add(waitLimit)
	for {
		err := allThreadsHome()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the stuck thread was not ended: %w", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// holdChild starts two serving pods, reports the namespaces and pids, and
// waits to be killed.
func holdChild() error {
	c, pods, err := startPods("a", "b")
	if err != nil {
		return err
	}
	self, err := openNetns("/proc/self/ns/net")
	if err != nil {
		return err
	}
	h := held{Cluster: self.Inode()}
	_ = self.Close()
	for _, p := range pods {
		h.Pods = append(h.Pods, p.net.Netns().Inode())
		h.Servers = append(h.Servers, p.server.Process.Pid)
	}
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until killed
	stopPods(c, pods)
	return nil
}

// podAddr is the pod's address with a port, for the forward tests.
func podAddr(ip netip.Addr, port int) string {
	return net.JoinHostPort(ip.String(), strconv.Itoa(port))
}

//go:build linux

package nodenet_test

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/podgate/podgate/node"
	"github.com/podgate/podgate/node/netns"
	"github.com/podgate/podgate/node/poddns"
)

// nodeResolvConf is the node's resolv.conf in these roles (the agent's
// ResolvConf option, the kubelet's --resolv-conf), and as the kubelet
// writes it for a pod that gets the node's.
const (
	nodeResolvConf       = "# the test node's\nnameserver 192.0.2.53\nsearch corp.example.\noptions timeout:1\n"
	nodeResolvConfForPod = "search corp.example\nnameserver 192.0.2.53\noptions timeout:1\n"
)

// writeNodeResolvConf writes nodeResolvConf into dir.
func writeNodeResolvConf(dir string) (string, error) {
	path := filepath.Join(dir, "node-resolv.conf")
	return path, os.WriteFile(path, []byte(nodeResolvConf), 0o644)
}

const managedHosts = "# Kubernetes-managed hosts file.\n" +
	"127.0.0.1\tlocalhost\n" +
	"::1\tlocalhost ip6-localhost ip6-loopback\n" +
	"fe00::0\tip6-localnet\n" +
	"fe00::0\tip6-mcastprefix\n" +
	"fe00::1\tip6-allnodes\n" +
	"fe00::2\tip6-allrouters\n"

// serviceIP is what the test's cluster DNS answers for the Service name.
var serviceIP = netip.MustParseAddr("10.96.7.7")

// dnsRole: with a cluster DNS (the test's server, on the node's address)
// every container of a ClusterFirst pod — an init container running as
// another user with a read-only root, and the main container, both with
// the pod's supplementalGroups — reads the
// kubelet's resolv.conf and hosts file at /etc/resolv.conf and
// /etc/hosts, and Go's resolver, reading them, resolves a Service's short
// name through the cluster DNS and a hostAlias through the hosts file.
// This machine's own files are untouched.
func dnsRole(cidr, dir string) error {
	resolvPath, err := writeNodeResolvConf(dir)
	if err != nil {
		return err
	}
	before, err := machineFiles()
	if err != nil {
		return err
	}
	check := yamlList([]string{self(), "dnscheck", "-resolve", "web,foo.alias"})
	app := yamlList([]string{self(), "dnscheck", "-resolve", "web,foo.alias,nothere", "--", "testapp", "--port", "8080"})
	var dns *dnsServer
	n, err := startNodeWith(cidr, func() string {
		return podYAML("dnspod", fmt.Sprintf(`  securityContext: {supplementalGroups: [3000, 4000]}
  hostname: db-0
  subdomain: db
  hostAliases: [{ip: "192.0.2.1", hostnames: [foo.alias, bar.alias]}]
  dnsConfig:
    options: [{name: edns0}]
  initContainers:
  - name: init
    image: ghcr.io/podgate/testapp
    command: %s
    securityContext: {runAsUser: 65532, runAsGroup: 65532, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    command: %s
    securityContext: {runAsUser: 0}
    readinessProbe:
      httpGet: {path: /readyz, port: 8080}
      periodSeconds: 1
`, check, app))
	}, nil, func(c *netns.Cluster, o *node.Options) error {
		var err error
		dns, err = startDNS(c.Gateway(), map[string]netip.Addr{"web.default.svc.cluster.local.": serviceIP})
		o.ClusterDNS = []netip.Addr{c.Gateway()}
		o.ResolvConf = resolvPath
		return err
	})
	if err != nil {
		if dns != nil {
			dns.Close()
		}
		return err
	}
	err = n.finish(n.checkDNS(dns))
	dns.Close()
	if err != nil {
		return err
	}
	after, err := machineFiles()
	if err != nil {
		return err
	}
	if after != before {
		return fmt.Errorf("this machine's /etc/resolv.conf and /etc/hosts changed:\n%s\nwas\n%s", after, before)
	}
	return nil
}

// machineFiles is this machine's /etc/resolv.conf and /etc/hosts, as the
// node sees them.
func machineFiles() (string, error) {
	var b strings.Builder
	for _, p := range []string{"/etc/resolv.conf", "/etc/hosts"} {
		c, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		b.Write(c)
	}
	return b.String(), nil
}

func (n *testNode) checkDNS(dns *dnsServer) error {
	pods, err := n.readyPods("dnspod", 1)
	if err != nil {
		return err
	}
	ip := pods[0].Status.PodIP
	gw := n.cluster.Gateway().String()
	wantResolv := "search default.svc.cluster.local svc.cluster.local cluster.local corp.example\nnameserver " + gw + "\noptions ndots:5 edns0\n"
	wantHosts := managedHosts + ip + "\tdb-0.db.default.svc.cluster.local\tdb-0\n\n# Entries added by HostAliases.\n192.0.2.1\tfoo.alias\tbar.alias\n"
	// The init container runs as its runAsUser:runAsGroup, the app as
	// its runAsUser 0 with group 0 (another user than the image's: not
	// the image's group); both with the pod's supplementalGroups.
	for _, c := range []struct{ name, uid, gid string }{{"init", "65532", "65532"}, {"app", "0", "0"}} {
		r, err := n.dnsReport("dnspod", c.name)
		if err != nil {
			return err
		}
		if r.Uid != c.uid || r.Gid != c.gid || r.Groups != "3000 4000" {
			return fmt.Errorf("%s ran as %s:%s groups %q, want %s:%s groups 3000 4000", c.name, r.Uid, r.Gid, r.Groups, c.uid, c.gid)
		}
		if r.ResolvConf != wantResolv {
			return fmt.Errorf("%s's /etc/resolv.conf:\n%s\nwant\n%s", c.name, r.ResolvConf, wantResolv)
		}
		if r.Hosts != wantHosts {
			return fmt.Errorf("%s's /etc/hosts:\n%s\nwant\n%s", c.name, r.Hosts, wantHosts)
		}
		if got := r.Lookups["web"]; !slices.Equal(got, []string{serviceIP.String()}) {
			return fmt.Errorf("%s: web resolved to %v (%s), want %s through the cluster DNS", c.name, got, r.Errors["web"], serviceIP)
		}
		if got := r.Lookups["foo.alias"]; !slices.Equal(got, []string{"192.0.2.1"}) {
			return fmt.Errorf("%s: foo.alias resolved to %v (%s), want the hostAlias 192.0.2.1", c.name, got, r.Errors["foo.alias"])
		}
	}
	app, _ := n.dnsReport("dnspod", "app")
	if _, ok := app.Errors["nothere"]; !ok {
		return fmt.Errorf("nothere resolved to %v, want no such host", app.Lookups["nothere"])
	}
	// The short name went to the cluster DNS as its first search domain
	// made it.
	for {
		select {
		case q := <-dns.asked:
			if q == "TypeA web.default.svc.cluster.local." {
				return n.noEvent(poddns.ReasonMissingClusterDNS)
			}
			continue
		default:
		}
		return fmt.Errorf("the cluster DNS was never asked A web.default.svc.cluster.local.")
	}
}

// noEvent checks that no event has reason.
func (n *testNode) noEvent(reason string) error {
	evs, _ := n.store.Events.List("default")
	for _, e := range evs {
		if e.Reason == reason {
			return fmt.Errorf("event %s: %s", e.Reason, e.Message)
		}
	}
	return nil
}

// hostNetRole: a hostNetwork pod (kube-proxy's kind: privileged, root,
// NET_ADMIN) runs in the node's own namespace, its status.podIP is the
// node's address, its program listens there, it holds NET_ADMIN, and it
// reads the node's resolv.conf (ClusterFirst on the host network is
// Default) and the node's hosts file under the kubelet's header. Without
// a cluster DNS, a ClusterFirst pod on the pod network falls back to the
// node's resolv.conf, with the kubelet's MissingClusterDNS warning.
func hostNetRole(cidr, dir string) error {
	resolvPath, err := writeNodeResolvConf(dir)
	if err != nil {
		return err
	}
	var port int
	manifest := func() string {
		return podYAML("proxy", fmt.Sprintf(`  hostNetwork: true
  containers:
  - name: proxy
    image: ghcr.io/podgate/testapp
    command: %s
    securityContext: {privileged: true, runAsUser: 0, capabilities: {add: [NET_ADMIN]}}
    readinessProbe:
      httpGet: {path: /readyz, port: %d}
      periodSeconds: 1
`, yamlList([]string{self(), "dnscheck", "--", "testapp", "--port", strconv.Itoa(port)}), port)) + "---\n" +
			podYAML("plain", fmt.Sprintf(`  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    command: %s
`, yamlList([]string{self(), "dnscheck", "--", "testapp", "--port", "8080"})))
	}
	// The port is a free one of the node's address, known once the
	// cluster network is up: the manifest is made then.
	n, err := startNodeWith(cidr, manifest, nil, func(c *netns.Cluster, o *node.Options) error {
		ln, err := net.Listen("tcp", netip.AddrPortFrom(c.Gateway(), 0).String())
		if err != nil {
			return err
		}
		port = ln.Addr().(*net.TCPAddr).Port
		o.ResolvConf = resolvPath
		return ln.Close()
	})
	if err != nil {
		return err
	}
	return n.finish(n.checkHostNet(port))
}

func (n *testNode) checkHostNet(port int) error {
	pods, err := n.readyPods("proxy", 1)
	if err != nil {
		return err
	}
	p := pods[0]
	gw := n.cluster.Gateway().String()
	if p.Status.PodIP != gw || len(p.Status.PodIPs) != 1 || p.Status.PodIPs[0].IP != gw || p.Status.HostIP != gw {
		return fmt.Errorf("podIP %s podIPs %v hostIP %s, want the node's %s for all", p.Status.PodIP, p.Status.PodIPs, p.Status.HostIP, gw)
	}
	url := "http://" + net.JoinHostPort(gw, strconv.Itoa(port)) + "/"
	if code, body, err := httpGet(url); err != nil || code != 200 || body != "proxy\n" {
		return fmt.Errorf("GET %s = %d %q (%v), want the pod's name", url, code, body, err)
	}
	r, err := n.dnsReport("proxy", "proxy")
	if err != nil {
		return err
	}
	cluster, err := clusterNetns()
	if err != nil {
		return err
	}
	if r.Netns != cluster {
		return fmt.Errorf("the hostNetwork pod's process runs in %s, want the node's %s", r.Netns, cluster)
	}
	if eff, err := strconv.ParseUint(r.CapEff, 16, 64); err != nil || eff&(1<<12) == 0 || r.Uid != "0" {
		return fmt.Errorf("the hostNetwork pod's process: uid %s CapEff %s, want root with NET_ADMIN (bit 12)", r.Uid, r.CapEff)
	}
	if r.ResolvConf != nodeResolvConfForPod {
		return fmt.Errorf("the hostNetwork pod's /etc/resolv.conf:\n%s\nwant the node's\n%s", r.ResolvConf, nodeResolvConfForPod)
	}
	machineHosts, err := os.ReadFile("/etc/hosts")
	if err != nil {
		return err
	}
	if want := "# Kubernetes-managed hosts file (host network).\n" + string(machineHosts); r.Hosts != want {
		return fmt.Errorf("the hostNetwork pod's /etc/hosts:\n%s\nwant\n%s", r.Hosts, want)
	}
	plain, err := n.dnsReport("plain", "app")
	if err != nil {
		return err
	}
	if plain.ResolvConf != nodeResolvConfForPod {
		return fmt.Errorf("a ClusterFirst pod without cluster DNS has /etc/resolv.conf:\n%s\nwant the node's\n%s", plain.ResolvConf, nodeResolvConfForPod)
	}
	return poll("the MissingClusterDNS warning on pod plain", func() (bool, string) {
		evs, _ := n.store.Events.List("default")
		var seen []string
		for _, e := range evs {
			if e.Reason == poddns.ReasonMissingClusterDNS && e.InvolvedObject.Name == "plain" &&
				strings.Contains(e.Message, `kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`) {
				return true, ""
			}
			seen = append(seen, e.InvolvedObject.Name+" "+e.Reason)
		}
		return false, strings.Join(seen, "; ")
	})
}

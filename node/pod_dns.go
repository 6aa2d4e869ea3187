package node

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/node/poddns"
	"github.com/podgate/podgate/node/proc"
)

// Where a container finds the pod's DNS files.
const (
	etcResolvConf = "/etc/resolv.conf"
	etcHosts      = "/etc/hosts"
)

// hostNet is a hostNetwork pod's network: the node's own. Its address is
// the node's (status.podIP is status.hostIP, as the kubelet reports it),
// its processes start where the node runs, and its ports are the node's.
type hostNet struct{ ip netip.Addr }

func (h hostNet) IP() netip.Addr              { return h.ip }
func (h hostNet) Enter(fn func() error) error { return fn() }
func (h hostNet) Close() error                { return nil }

// podFiles is what a pod's containers read to resolve names: its
// resolv.conf and hosts file, written as the kubelet composes them
// (package node/poddns) into a directory of the pod's own, and bound
// over /etc/resolv.conf and /etc/hosts for each of its containers.
type podFiles struct {
	binds []proc.Bind
	// events are the kubelet's warnings about the pod's DNS
	// (MissingClusterDNS, DNSConfigForming).
	events []poddns.Event
}

// writePodFiles writes the files of pod, whose address is ip, into its
// directory podDir.
func (a *Agent) writePodFiles(pod *corev1.Pod, ip netip.Addr, podDir string) (podFiles, error) {
	f, err := os.Open(a.opts.ResolvConf)
	if err != nil {
		return podFiles{}, fmt.Errorf("the node's resolv.conf: %w", err)
	}
	host, err := poddns.Parse(f)
	f.Close()
	if err != nil {
		return podFiles{}, fmt.Errorf("the node's resolv.conf %s: %w", a.opts.ResolvConf, err)
	}
	rc, evs := poddns.ForPod(pod, poddns.Node{
		ClusterDNS: a.opts.ClusterDNS, ClusterDomain: a.opts.ClusterDomain,
		Host: &host, IPv6: a.opts.HostIP.Is6(),
	})
	var hosts []byte
	if pod.Spec.HostNetwork {
		nodeHosts, err := os.ReadFile(etcHosts)
		if err != nil {
			return podFiles{}, fmt.Errorf("the node's hosts file: %w", err)
		}
		hosts = poddns.HostNetworkHosts(pod, nodeHosts)
	} else {
		hosts = poddns.Hosts(pod, []string{ip.String()}, a.opts.ClusterDomain)
	}
	dir := filepath.Join(podDir, "dns")
	pf := podFiles{events: evs}
	// Every container's user reads them, whoever it runs as.
	if err = os.MkdirAll(dir, 0o755); err == nil {
		err = os.Chmod(dir, 0o755)
	}
	for _, file := range []struct {
		name, target string
		content      []byte
		readOnly     bool
	}{
		// A container runtime mounts resolv.conf read-only into a
		// container with a read-only root file system; the kubelet mounts
		// the hosts file writable in every container.
		{"resolv.conf", etcResolvConf, rc.Bytes(), true},
		{"hosts", etcHosts, hosts, false},
	} {
		if err != nil {
			break
		}
		src := filepath.Join(dir, file.name)
		if err = os.WriteFile(src, file.content, 0o644); err == nil {
			err = os.Chmod(src, 0o644) // whatever the umask
		}
		pf.binds = append(pf.binds, proc.Bind{Source: src, Target: file.target, ReadOnly: file.readOnly})
	}
	if err != nil {
		return podFiles{}, fmt.Errorf("the pod's DNS files: %w", err)
	}
	return pf, nil
}

// makePodsDir is the directory of the pods' own files (Options.PodsDir):
// dir, made if missing, or when dir is empty one of the agent's own (own).
// None when the pods get no files of their own.
func makePodsDir(podFiles bool, dir string) (path string, own bool, err error) {
	switch {
	case !podFiles:
		return "", false, nil
	case dir == "":
		if dir, err = os.MkdirTemp("", "podgate-pods-"); err != nil {
			return "", false, fmt.Errorf("runtime: the pods' directory: %w", err)
		}
		own = true
	default:
		if err := os.MkdirAll(dir, 0o711); err != nil {
			return "", false, fmt.Errorf("runtime: the pods' directory (Options.PodsDir): %w", err)
		}
	}
	// Containers running as other users than root read their files
	// through it (the bind mounts resolve their sources by path).
	if err := os.Chmod(dir, 0o711); err != nil {
		removeOwn(dir, own)
		return "", false, fmt.Errorf("runtime: the pods' directory: %w", err)
	}
	return dir, own, nil
}

// removeOwn removes the pods' directory if it is the agent's own.
func removeOwn(dir string, own bool) {
	if own {
		_ = os.RemoveAll(dir)
	}
}

// podDir makes the directory of the pod's own files in the pods'
// directory: named after its UID, as the kubelet names it (a pod without
// one, by namespace and name and a random suffix). It is searchable only
// (MkdirTemp makes 0700), as the pods' directory.
func (a *Agent) podDir(pod *corev1.Pod) (string, error) {
	if pod.UID == "" {
		dir, err := os.MkdirTemp(a.podsDir, pod.Namespace+"_"+pod.Name+"-")
		if err != nil {
			return "", err
		}
		return dir, os.Chmod(dir, 0o711)
	}
	dir := filepath.Join(a.podsDir, string(pod.UID))
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return "", err
	}
	return dir, os.Chmod(dir, 0o711)
}

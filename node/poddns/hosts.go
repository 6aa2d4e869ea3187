package poddns

import (
	"bytes"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The first line of the hosts files the kubelet writes.
const (
	hostsHeader            = "# Kubernetes-managed hosts file.\n"
	hostsHeaderHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// maxHostnameLen is a DNS label's: the kubelet cuts a pod name used as
// its hostname to it.
const maxHostnameLen = 63

// Hostname is the pod's host name and domain as the kubelet gives them:
// spec.hostname, else the pod's name cut to 63 characters (without a
// trailing '-' or '.' the cut leaves); the domain, when spec.subdomain is
// set, SUBDOMAIN.NAMESPACE.svc.CLUSTERDOMAIN.
func Hostname(pod *corev1.Pod, clusterDomain string) (host, domain string) {
	host = pod.Name
	if len(host) > maxHostnameLen {
		host = strings.TrimRight(host[:maxHostnameLen], "-.")
	}
	if pod.Spec.Hostname != "" {
		host = pod.Spec.Hostname
	}
	if pod.Spec.Subdomain != "" {
		domain = fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return host, domain
}

// Hosts is the pod's /etc/hosts as the kubelet writes it: localhost and
// the IPv6 names, then each of podIPs with the pod's host name (its FQDN
// first when it has a subdomain), then spec.hostAliases, one line per
// address.
func Hosts(pod *corev1.Pod, podIPs []string, clusterDomain string) []byte {
	host, domain := Hostname(pod, clusterDomain)
	var b bytes.Buffer
	b.WriteString(hostsHeader)
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range podIPs {
		if domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, host, domain, host)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, host)
		}
	}
	b.Write(aliases(pod.Spec.HostAliases))
	return b.Bytes()
}

// HostNetworkHosts is a host-network pod's /etc/hosts: the node's own
// (nodeHosts, its content) under the kubelet's header, and the pod's
// hostAliases.
func HostNetworkHosts(pod *corev1.Pod, nodeHosts []byte) []byte {
	var b bytes.Buffer
	b.WriteString(hostsHeaderHostNetwork)
	b.Write(nodeHosts)
	b.Write(aliases(pod.Spec.HostAliases))
	return b.Bytes()
}

func aliases(as []corev1.HostAlias) []byte {
	if len(as) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range as {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.Bytes()
}

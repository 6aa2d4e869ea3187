// Package poddns is what a pod's processes read to resolve names, as the
// kubelet makes it (pkg/kubelet/network/dns and the hosts file of
// pkg/kubelet): the pod's /etc/resolv.conf from its dnsPolicy and
// dnsConfig and the node's --cluster-dns, --cluster-domain and
// --resolv-conf, and its /etc/hosts. Pure functions: the node agent
// writes the files and binds them over /etc/resolv.conf and /etc/hosts
// for each container's process (node/proc's Security.Binds).
package poddns

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Limits the kubelet applies to what it composes (the API's validation
// holds a pod's own dnsConfig to them too): at most 3 nameservers, 32
// search domains, a search line of 2048 characters, no search domain
// longer than a DNS subdomain (253; a longer one aborts glibc's
// resolver).
const (
	MaxNameservers     = 3
	MaxSearchDomains   = 32
	MaxSearchLineChars = 2048
	maxSearchDomainLen = 253
	// DefaultClusterDomain is the kubelet's --cluster-domain of every
	// common setup (the kubelet itself has no default).
	DefaultClusterDomain = "cluster.local"
	// maxFileBytes bounds a resolv.conf read, as the kubelet's 10 MB.
	maxFileBytes = 10 << 20
)

// Event reasons the kubelet records on the pod when it composes its DNS.
const (
	ReasonMissingClusterDNS = "MissingClusterDNS"
	ReasonDNSConfigForming  = "DNSConfigForming"
)

// ResolvConf is a resolv.conf's content: nameserver lines, the search
// line and the options line.
type ResolvConf struct {
	Nameservers []string
	Searches    []string
	Options     []string
}

// Parse reads a resolv.conf as the kubelet reads the node's: every
// nameserver line adds one (its first field), the last search line and
// the last options line win, comments (#) and unknown lines are skipped,
// a search domain's trailing dot is dropped. A nameserver line without an
// address is an error, reported after the whole file was read.
func Parse(r io.Reader) (ResolvConf, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxFileBytes+1))
	if err != nil {
		return ResolvConf{}, fmt.Errorf("read resolv.conf: %w", err)
	}
	if len(b) > maxFileBytes {
		return ResolvConf{}, fmt.Errorf("resolv.conf is larger than %d bytes", maxFileBytes)
	}
	rc := ResolvConf{Nameservers: []string{}, Searches: []string{}, Options: []string{}}
	var errs []error
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), maxFileBytes+1)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) < 2 {
				errs = append(errs, errors.New("resolv.conf: a nameserver line without an address"))
				continue
			}
			rc.Nameservers = append(rc.Nameservers, f[1])
		case "search":
			rc.Searches = []string{}
			for _, s := range f[1:] {
				rc.Searches = append(rc.Searches, strings.TrimSuffix(s, "."))
			}
		case "options":
			rc.Options = append([]string{}, f[1:]...)
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("read resolv.conf: %w", err))
	}
	return rc, errors.Join(errs...)
}

// Bytes is the file: search, nameserver and options lines, as a container
// runtime writes a pod's resolv.conf (a line only when it has entries).
func (rc ResolvConf) Bytes() []byte {
	var b bytes.Buffer
	if len(rc.Searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(rc.Searches, " "))
	}
	for _, ns := range rc.Nameservers {
		fmt.Fprintf(&b, "nameserver %s\n", ns)
	}
	if len(rc.Options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(rc.Options, " "))
	}
	return b.Bytes()
}

// Node is the node's DNS settings, the kubelet's flags.
type Node struct {
	// ClusterDNS is --cluster-dns: the cluster DNS servers' addresses.
	// Empty: ClusterFirst pods fall back to Default.
	ClusterDNS []netip.Addr
	// ClusterDomain is --cluster-domain; empty: no cluster search
	// domains.
	ClusterDomain string
	// Host is the node's resolv.conf (--resolv-conf) as Parse read it;
	// nil is --resolv-conf "": Default pods get nameserver 127.0.0.1
	// (::1 on an IPv6 node) and search ".", the kubelet's way of
	// turning lookups off.
	Host *ResolvConf
	// IPv6 says the node's address is IPv6 (for that fallback).
	IPv6 bool
}

// Event is a warning the kubelet records on the pod while composing its
// DNS.
type Event struct{ Reason, Message string }

// Policy is the kubelet's kind of DNS for pod: the cluster's, the node's
// or none. ClusterFirst on the host network is the node's; a policy the
// API would have refused is ClusterFirst (the kubelet's fallback).
type Policy int

const (
	// Cluster: the cluster DNS, with the cluster's search domains.
	Cluster Policy = iota
	// Host: the node's resolv.conf.
	Host
	// None: the pod's dnsConfig alone.
	None
)

// PolicyOf is pod's kind of DNS.
func PolicyOf(spec *corev1.PodSpec) Policy {
	switch spec.DNSPolicy {
	case corev1.DNSNone:
		return None
	case corev1.DNSClusterFirstWithHostNet:
		return Cluster
	case corev1.DNSDefault:
		return Host
	case corev1.DNSClusterFirst, "":
		if spec.HostNetwork {
			return Host
		}
		return Cluster
	}
	return Cluster
}

// ForPod is pod's resolv.conf on node, with the warnings the kubelet
// records on the pod: its fallback from ClusterFirst when the node has no
// cluster DNS (MissingClusterDNS), and what it cut to fit the limits
// (DNSConfigForming).
func ForPod(pod *corev1.Pod, node Node) (ResolvConf, []Event) {
	var rc ResolvConf
	var evs []Event
	if node.Host != nil {
		rc = ResolvConf{
			Nameservers: slices.Clone(node.Host.Nameservers),
			Searches:    slices.Clone(node.Host.Searches),
			Options:     slices.Clone(node.Host.Options),
		}
	}
	policy := PolicyOf(&pod.Spec)
	if policy == Cluster && len(node.ClusterDNS) == 0 {
		evs = append(evs, Event{ReasonMissingClusterDNS, fmt.Sprintf(
			"pod: %q. kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.",
			podDesc(pod), corev1.DNSClusterFirst, corev1.DNSDefault)})
		policy = Host
	}
	switch policy {
	case None:
		rc = ResolvConf{}
	case Cluster:
		rc.Nameservers = nil
		for _, a := range node.ClusterDNS {
			rc.Nameservers = append(rc.Nameservers, a.String())
		}
		if d := node.ClusterDomain; d != "" {
			rc.Searches = dedup(append([]string{pod.Namespace + ".svc." + d, "svc." + d, d}, rc.Searches...))
		}
		rc.Options = []string{"ndots:5"}
	case Host:
		if node.Host == nil {
			rc.Nameservers = []string{"127.0.0.1"}
			if node.IPv6 {
				rc.Nameservers = []string{"::1"}
			}
			rc.Searches = []string{"."}
		}
	}
	if c := pod.Spec.DNSConfig; c != nil {
		rc.Nameservers = dedup(append(rc.Nameservers, c.Nameservers...))
		rc.Searches = dedup(append(rc.Searches, c.Searches...))
		rc.Options = mergeOptions(rc.Options, c.Options)
	}
	if len(rc.Nameservers) > MaxNameservers {
		rc.Nameservers = rc.Nameservers[:MaxNameservers]
		evs = append(evs, Event{ReasonDNSConfigForming, "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: " + strings.Join(rc.Nameservers, " ")})
	}
	var cut bool
	if rc.Searches, cut = fitSearches(rc.Searches); cut {
		evs = append(evs, Event{ReasonDNSConfigForming, "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(rc.Searches, " ")})
	}
	return rc, evs
}

// fitSearches keeps the first MaxSearchDomains domains, leaves out any
// longer than a DNS subdomain, then cuts domains from the end until the
// line fits MaxSearchLineChars. cut: something was left out.
func fitSearches(s []string) (_ []string, cut bool) {
	if len(s) > MaxSearchDomains {
		s, cut = s[:MaxSearchDomains], true
	}
	kept := s[:0:0]
	for _, d := range s {
		if len(d) > maxSearchDomainLen {
			cut = true
			continue
		}
		kept = append(kept, d)
	}
	for len(kept) > 0 && len(strings.Join(kept, " ")) > MaxSearchLineChars {
		kept, cut = kept[:len(kept)-1], true
	}
	return kept, cut
}

// mergeOptions is the node's options with the pod's over them: an option
// the pod names (name or name:value) replaces the one of that name. The
// node's come first, in order, then the pod's new ones in order (the
// kubelet's order is a map's, unspecified).
func mergeOptions(base []string, pod []corev1.PodDNSConfigOption) []string {
	type opt struct{ name, value string }
	var opts []opt
	set := func(name, value string) {
		for i := range opts {
			if opts[i].name == name {
				opts[i].value = value
				return
			}
		}
		opts = append(opts, opt{name, value})
	}
	for _, o := range base {
		name, value, _ := strings.Cut(o, ":")
		set(name, value)
	}
	for _, o := range pod {
		value := ""
		if o.Value != nil {
			value = *o.Value
		}
		set(o.Name, value)
	}
	out := []string{}
	for _, o := range opts {
		if o.value != "" {
			out = append(out, o.name+":"+o.value)
		} else {
			out = append(out, o.name)
		}
	}
	return out
}

func dedup(s []string) []string {
	var out []string
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// podDesc is the kubelet's name of a pod in messages: NAME_NAMESPACE(UID).
func podDesc(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

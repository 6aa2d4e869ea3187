package poddns

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(mutate func(*corev1.PodSpec)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", UID: "u1"},
		Spec:       corev1.PodSpec{DNSPolicy: corev1.DNSClusterFirst},
	}
	if mutate != nil {
		mutate(&p.Spec)
	}
	return p
}

func ptr[T any](v T) *T { return &v }

var (
	host = &ResolvConf{
		Nameservers: []string{"192.0.2.53", "192.0.2.54"},
		Searches:    []string{"corp.example", "example"},
		Options:     []string{"edns0", "timeout:2"},
	}
	withDNS = Node{ClusterDNS: []netip.Addr{netip.MustParseAddr("10.96.0.10")}, ClusterDomain: "cluster.local", Host: host}
)

func TestForPod(t *testing.T) {
	t.Parallel()
	many := func(n int, f string) []string {
		var s []string
		for i := range n {
			s = append(s, fmt.Sprintf(f, i))
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		node    Node
		want    ResolvConf
		reasons []string
	}{
		{
			name: "ClusterFirst: the cluster DNS alone, the cluster's search domains before the node's, ndots:5 and none of the node's options",
			pod:  pod(nil), node: withDNS,
			want: ResolvConf{[]string{"10.96.0.10"}, []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "example"}, []string{"ndots:5"}},
		},
		{
			name: "an empty dnsPolicy is ClusterFirst",
			pod:  pod(func(s *corev1.PodSpec) { s.DNSPolicy = "" }), node: withDNS,
			want: ResolvConf{[]string{"10.96.0.10"}, []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "example"}, []string{"ndots:5"}},
		},
		{
			name: "ClusterFirst with hostNetwork falls back to the node's resolv.conf",
			pod:  pod(func(s *corev1.PodSpec) { s.HostNetwork = true }), node: withDNS,
			want: *host,
		},
		{
			name: "ClusterFirstWithHostNet on the host network uses the cluster DNS",
			pod:  pod(func(s *corev1.PodSpec) { s.HostNetwork, s.DNSPolicy = true, corev1.DNSClusterFirstWithHostNet }), node: withDNS,
			want: ResolvConf{[]string{"10.96.0.10"}, []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "example"}, []string{"ndots:5"}},
		},
		{
			name: "ClusterFirst without cluster DNS falls back to the node's resolv.conf, with the kubelet's MissingClusterDNS warning",
			pod:  pod(nil), node: Node{ClusterDomain: "cluster.local", Host: host},
			want: *host, reasons: []string{ReasonMissingClusterDNS},
		},
		{
			name: "ClusterFirst without a cluster domain has the node's search domains only",
			pod:  pod(nil), node: Node{ClusterDNS: withDNS.ClusterDNS, Host: host},
			want: ResolvConf{[]string{"10.96.0.10"}, []string{"corp.example", "example"}, []string{"ndots:5"}},
		},
		{
			name: "a search domain of the node's that the cluster's repeat appears once",
			pod:  pod(nil), node: Node{ClusterDNS: withDNS.ClusterDNS, ClusterDomain: "cluster.local", Host: &ResolvConf{Searches: []string{"cluster.local", "x"}}},
			want: ResolvConf{[]string{"10.96.0.10"}, []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "x"}, []string{"ndots:5"}},
		},
		{
			name: "Default is the node's resolv.conf, whatever the cluster DNS",
			pod:  pod(func(s *corev1.PodSpec) { s.DNSPolicy = corev1.DNSDefault }), node: withDNS,
			want: *host,
		},
		{
			name: "Default without a node resolv.conf (--resolv-conf \"\") is 127.0.0.1 and search \".\"",
			pod:  pod(func(s *corev1.PodSpec) { s.DNSPolicy = corev1.DNSDefault }), node: Node{},
			want: ResolvConf{[]string{"127.0.0.1"}, []string{"."}, nil},
		},
		{
			name: "None is the pod's dnsConfig alone",
			pod: pod(func(s *corev1.PodSpec) {
				s.DNSPolicy = corev1.DNSNone
				s.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"a.example"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr("2")}, {Name: "edns0"}}}
			}), node: withDNS,
			want: ResolvConf{[]string{"1.1.1.1"}, []string{"a.example"}, []string{"ndots:2", "edns0"}},
		},
		{
			name: "dnsConfig adds nameservers and searches after the policy's, without repeats, and its options replace those of the same name",
			pod: pod(func(s *corev1.PodSpec) {
				s.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"10.96.0.10", "1.1.1.1"}, Searches: []string{"example", "extra"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr("1")}, {Name: "single-request"}}}
			}), node: withDNS,
			want: ResolvConf{[]string{"10.96.0.10", "1.1.1.1"}, []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "example", "extra"}, []string{"ndots:1", "single-request"}},
		},
		{
			name: "more than 3 nameservers keep the first 3, with a DNSConfigForming warning",
			pod: pod(func(s *corev1.PodSpec) {
				s.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "8.8.8.8", "9.9.9.9"}}
			}), node: withDNS,
			want:    ResolvConf{[]string{"10.96.0.10", "1.1.1.1", "8.8.8.8"}, []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "example"}, []string{"ndots:5"}},
			reasons: []string{ReasonDNSConfigForming},
		},
		{
			name: "more than 32 search domains keep the first 32, with a DNSConfigForming warning",
			pod:  pod(func(s *corev1.PodSpec) { s.DNSConfig = &corev1.PodDNSConfig{Searches: many(40, "d%d.example")} }), node: withDNS,
			want:    ResolvConf{[]string{"10.96.0.10"}, append([]string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "example"}, many(27, "d%d.example")...), []string{"ndots:5"}},
			reasons: []string{ReasonDNSConfigForming},
		},
		{
			name: "a search line over 2048 characters loses domains from its end until it fits",
			pod: pod(func(s *corev1.PodSpec) {
				s.DNSPolicy = corev1.DNSNone
				s.DNSConfig = &corev1.PodDNSConfig{Searches: many(10, strings.Repeat("a", 240)+"%d")}
			}), node: withDNS,
			want:    ResolvConf{nil, many(8, strings.Repeat("a", 240)+"%d"), []string{}},
			reasons: []string{ReasonDNSConfigForming},
		},
		{
			name: "a search domain of the node's longer than 253 characters is left out",
			pod:  pod(nil), node: Node{ClusterDNS: withDNS.ClusterDNS, ClusterDomain: "cluster.local", Host: &ResolvConf{Searches: []string{strings.Repeat("b", 254), "ok"}}},
			want:    ResolvConf{[]string{"10.96.0.10"}, []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "ok"}, []string{"ndots:5"}},
			reasons: []string{ReasonDNSConfigForming},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, evs := ForPod(tc.pod, tc.node)
			if !slices.Equal(got.Nameservers, tc.want.Nameservers) || !slices.Equal(got.Searches, tc.want.Searches) || !slices.Equal(got.Options, tc.want.Options) {
				t.Errorf("ForPod =\n%s\nwant\n%s", got.Bytes(), tc.want.Bytes())
			}
			var reasons []string
			for _, e := range evs {
				reasons = append(reasons, e.Reason)
			}
			if !slices.Equal(reasons, tc.reasons) {
				t.Errorf("events %v, want reasons %v", evs, tc.reasons)
			}
		})
	}
}

func TestTheMissingClusterDNSWarningIsTheKubelets(t *testing.T) {
	t.Parallel()
	_, evs := ForPod(pod(nil), Node{Host: host})
	want := `pod: "web-1_shop(u1)". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`
	if len(evs) != 1 || evs[0].Message != want {
		t.Fatalf("events %v, want one with %q", evs, want)
	}
}

func TestTheNodeResolvConfIsLeftAlone(t *testing.T) {
	t.Parallel()
	n := Node{ClusterDNS: withDNS.ClusterDNS, ClusterDomain: "cluster.local", Host: &ResolvConf{Nameservers: []string{"192.0.2.1"}, Searches: []string{"x"}, Options: []string{"a"}}}
	p := pod(func(s *corev1.PodSpec) {
		s.DNSPolicy = corev1.DNSDefault
		s.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"y"}, Options: []corev1.PodDNSConfigOption{{Name: "b"}}}
	})
	ForPod(p, n)
	if got := string(n.Host.Bytes()); got != "search x\nnameserver 192.0.2.1\noptions a\n" {
		t.Fatalf("the node's resolv.conf became %q", got)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     ResolvConf
		err      bool
	}{
		{"nameservers add up, the last search and options lines win, comments are skipped",
			"# generated\nnameserver 192.0.2.1\nsearch a b\n  nameserver 192.0.2.2 ignored\nsearch c.example. d\noptions x\noptions ndots:2 edns0\nsortlist 1.2.3.4\n",
			ResolvConf{[]string{"192.0.2.1", "192.0.2.2"}, []string{"c.example", "d"}, []string{"ndots:2", "edns0"}}, false},
		{"an empty file has nothing", "", ResolvConf{[]string{}, []string{}, []string{}}, false},
		{"a nameserver line without an address is an error, the rest still read",
			"nameserver\nnameserver 192.0.2.9\n", ResolvConf{[]string{"192.0.2.9"}, []string{}, []string{}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(strings.NewReader(tc.in))
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want one: %v", err, tc.err)
			}
			if !slices.Equal(got.Nameservers, tc.want.Nameservers) || !slices.Equal(got.Searches, tc.want.Searches) || !slices.Equal(got.Options, tc.want.Options) {
				t.Errorf("Parse = %#v, want %#v", got, tc.want)
			}
		})
	}
}

// FuzzParse: any input parses without panic, and what Bytes writes of
// it parses back to the same thing.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "nameserver 1.2.3.4\n", "search a b.\noptions ndots:5\n", "#x\nnameserver\n", "search\n", "options\t a  b\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rc, _ := Parse(strings.NewReader(s))
		again, err := Parse(strings.NewReader(string(rc.Bytes())))
		if err != nil {
			t.Fatalf("Bytes of %q does not parse: %v", s, err)
		}
		// A search domain "." becomes "" (the kubelet drops a trailing
		// dot), which the written line loses; ".." loses a dot per round;
		// a nameserver or option starting with '#' becomes a comment: the
		// file written is what the kubelet writes of them, not a fixed
		// point.
		clean := func(xs []string) bool {
			for _, x := range xs {
				if x == "" || strings.HasPrefix(x, "#") || strings.HasSuffix(x, ".") {
					return false
				}
			}
			return true
		}
		if clean(rc.Nameservers) && clean(rc.Searches) && clean(rc.Options) {
			if !slices.Equal(again.Nameservers, rc.Nameservers) || !slices.Equal(again.Searches, rc.Searches) || !slices.Equal(again.Options, rc.Options) {
				t.Fatalf("%q: parsed %#v, written and parsed again %#v", s, rc, again)
			}
		}
	})
}

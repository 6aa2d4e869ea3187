package poddns

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const localLines = "# Kubernetes-managed hosts file.\n" +
	"127.0.0.1\tlocalhost\n" +
	"::1\tlocalhost ip6-localhost ip6-loopback\n" +
	"fe00::0\tip6-localnet\n" +
	"fe00::0\tip6-mcastprefix\n" +
	"fe00::1\tip6-allnodes\n" +
	"fe00::2\tip6-allrouters\n"

func TestHosts(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 62) + "-abc"
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"the pod's IP carries its name", pod(nil), localLines + "10.244.0.7\tweb-1\n"},
		{"spec.hostname replaces the name", pod(func(s *corev1.PodSpec) { s.Hostname = "db" }), localLines + "10.244.0.7\tdb\n"},
		{"with a subdomain the FQDN comes first", pod(func(s *corev1.PodSpec) { s.Hostname, s.Subdomain = "db-0", "db" }),
			localLines + "10.244.0.7\tdb-0.db.shop.svc.cluster.local\tdb-0\n"},
		{"hostAliases follow, one line per address", pod(func(s *corev1.PodSpec) {
			s.HostAliases = []corev1.HostAlias{{IP: "192.0.2.1", Hostnames: []string{"foo.local", "bar.local"}}, {IP: "192.0.2.2", Hostnames: []string{"baz"}}}
		}), localLines + "10.244.0.7\tweb-1\n\n# Entries added by HostAliases.\n192.0.2.1\tfoo.local\tbar.local\n192.0.2.2\tbaz\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := string(Hosts(tc.pod, []string{"10.244.0.7"}, "cluster.local")); got != tc.want {
				t.Errorf("Hosts =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	t.Run("a name longer than 63 characters is cut, without the dash the cut leaves", func(t *testing.T) {
		t.Parallel()
		p := pod(nil)
		p.Name = long
		if h, _ := Hostname(p, "cluster.local"); h != strings.Repeat("x", 62) {
			t.Errorf("Hostname = %q", h)
		}
	})
}

func TestAHostNetworkPodGetsTheNodesHostsFileUnderTheKubeletsHeader(t *testing.T) {
	t.Parallel()
	p := pod(func(s *corev1.PodSpec) {
		s.HostNetwork = true
		s.HostAliases = []corev1.HostAlias{{IP: "192.0.2.1", Hostnames: []string{"foo"}}}
	})
	got := string(HostNetworkHosts(p, []byte("127.0.0.1 localhost\n10.0.0.5 node-a\n")))
	want := "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n10.0.0.5 node-a\n\n# Entries added by HostAliases.\n192.0.2.1\tfoo\n"
	if got != want {
		t.Errorf("HostNetworkHosts =\n%s\nwant\n%s", got, want)
	}
}

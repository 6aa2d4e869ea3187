package contract

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzDecode: Decode never panics, and whatever it accepts encodes to an
// environment that decodes to the same configuration.
func FuzzDecode(f *testing.F) {
	f.Add(`{"tcpSocket":{"port":8080,"host":"127.0.0.1"},"successThreshold":1}`, "false", "", `{"a":{"liveness":{"httpGet":{"port":1}}}}`, "", "x,y", "30s", "0123456789abcdef0123456789abcdef", "http://activator-service.knative-serving.svc.cluster.local:80")
	f.Add(`[{"httpGet":{"path":"/","port":8080}},{"grpc":{"port":9000}}]`, "true", "a,b", "", `{"b":{"startup":{"tcpSocket":{"port":2}}}}`, "", "1m", "a b", "http://127.0.0.1:1/")
	f.Add(`[]`, "true", "", `{}`, `{}`, ",", "", "", "http://[::1]:8080")
	f.Fuzz(func(t *testing.T, probes, multi, containers, routed, watched, excluded, drain, token, handoff string) {
		env := map[string]string{
			EnvServingReadinessProbe: probes,
			EnvMultiContainerProbes:  multi,
			EnvReadinessContainers:   containers,
			EnvRoutedProbes:          routed,
			EnvWatchedProbes:         watched,
			EnvExcludedContainers:    excluded,
			EnvDrainQuietPeriod:      drain,
			EnvAdminToken:            token,
			EnvHandoffURL:            handoff,
			EnvStatusSource:          StatusSourceKubernetes,
		}
		c, err := Decode(getter(env))
		if err != nil {
			return
		}
		again, err := Decode(getter(envMap(c.Encode())))
		if err != nil {
			t.Fatalf("re-decoding the encoded config: %v", err)
		}
		if !reflect.DeepEqual(c, again) {
			t.Fatalf("encode/decode changed the config:\n%+v\n%+v", c, again)
		}
	})
}

// FuzzParseHandoff: the marker's parser never panics, never counts more
// than MaxHandoffs or less than 1, and reads back what FormatHandoff wrote.
func FuzzParseHandoff(f *testing.F) {
	f.Add("app-00001-deployment-5d8f7-abcde;n=1")
	f.Add(";n=99999999999999999999")
	f.Add("x;n=+2")
	f.Add("a;n=1;n=2")
	f.Add("")
	f.Fuzz(func(t *testing.T, v string) {
		pod, n, ok := ParseHandoff(v)
		if n < 1 || n > MaxHandoffs {
			t.Fatalf("ParseHandoff(%q) counts %d", v, n)
		}
		if !ok {
			if n != MaxHandoffs {
				t.Fatalf("ParseHandoff(%q) failed but counts %d, want %d", v, n, MaxHandoffs)
			}
			return
		}
		if n < MaxHandoffs {
			if p2, n2, ok2 := ParseHandoff(FormatHandoff(pod, n)); !ok2 || p2 != pod || n2 != n {
				t.Fatalf("round trip of %q, %d: %q, %d, %v", pod, n, p2, n2, ok2)
			}
		}
	})
}

// FuzzSplitExcludedContainers: the annotation's parser never panics, its
// names are distinct, trimmed and not empty, and they read back the same
// with no problem once joined by commas.
func FuzzSplitExcludedContainers(f *testing.F) {
	f.Add("log-shipper,other")
	f.Add(" a , b ,, a ")
	f.Add(",")
	f.Add("")
	f.Fuzz(func(t *testing.T, v string) {
		names, _ := SplitExcludedContainers(v)
		seen := map[string]bool{}
		for _, n := range names {
			if n == "" || n != strings.TrimSpace(n) || strings.Contains(n, ",") || seen[n] {
				t.Fatalf("SplitExcludedContainers(%q) = %q: name %q empty, untrimmed, with a comma or repeated", v, names, n)
			}
			seen[n] = true
		}
		again, problems := SplitExcludedContainers(strings.Join(names, ","))
		if len(problems) > 0 || !reflect.DeepEqual(again, names) {
			t.Fatalf("%q read back as %q, problems %q", names, again, problems)
		}
	})
}

package contract

import (
	"reflect"
	"testing"
)

// FuzzDecode: Decode never panics, and whatever it accepts encodes to an
// environment that decodes to the same configuration.
func FuzzDecode(f *testing.F) {
	f.Add(`{"tcpSocket":{"port":8080,"host":"127.0.0.1"},"successThreshold":1}`, "false", "", `{"a":{"liveness":{"httpGet":{"port":1}}}}`, "30s", "0123456789abcdef0123456789abcdef")
	f.Add(`[{"httpGet":{"path":"/","port":8080}},{"grpc":{"port":9000}}]`, "true", "a,b", "", "1m", "a b")
	f.Add(`[]`, "true", "", `{}`, "", "")
	f.Fuzz(func(t *testing.T, probes, multi, containers, routed, drain, token string) {
		env := map[string]string{
			EnvServingReadinessProbe: probes,
			EnvMultiContainerProbes:  multi,
			EnvReadinessContainers:   containers,
			EnvRoutedProbes:          routed,
			EnvDrainQuietPeriod:      drain,
			EnvAdminToken:            token,
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

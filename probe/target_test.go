package probe

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestParseTargetTakesTheFlagsOfAProbeRunByHand(t *testing.T) {
	for _, tc := range []struct {
		name       string
		host       string
		ports, env []string
		want       Target
		wantErr    string
	}{
		{"a host alone", "127.0.0.1", nil, nil, Target{PodIP: "127.0.0.1"}, ""},
		{"ports and env, in order", "::1", []string{"http=8080", "grpc=9090"}, []string{"FILE=/tmp/x", "EMPTY="},
			Target{PodIP: "::1",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "grpc", ContainerPort: 9090}},
				Env:   []corev1.EnvVar{{Name: "FILE", Value: "/tmp/x"}, {Name: "EMPTY"}}}, ""},
		{"a host name is no IP", "pod.local", nil, nil, Target{}, `--host "pod.local" is not an IP address`},
		{"a port without a number", "127.0.0.1", []string{"web"}, nil, Target{}, `--port "web": want NAME=NUMBER`},
		{"a port without a name", "127.0.0.1", []string{"=80"}, nil, Target{}, `--port "=80": want NAME=NUMBER`},
		{"a port out of range", "127.0.0.1", []string{"web=0"}, nil, Target{}, `--port "web=0": port number "0" must be between 1 and 65535`},
		{"an env var without a name", "127.0.0.1", nil, []string{"=x"}, Target{}, `--env "=x": want NAME=VALUE`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTarget(tc.host, tc.ports, tc.env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseTarget: %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseTarget = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

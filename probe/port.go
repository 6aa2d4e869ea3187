package probe

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// resolvePort turns an httpGet/tcpSocket port into a number the way the
// kubelet does: a name is looked up in the container's ports, and a name
// that is not found is parsed as a number as a last resort. That is why an
// unknown name fails with strconv's text (`strconv.Atoi: parsing "http":
// invalid syntax`) rather than with "no such port". The error is returned
// unwrapped so its text is exactly the kubelet's.
func resolvePort(port intstr.IntOrString, ports []corev1.ContainerPort) (int, error) {
	var n int
	switch port.Type {
	case intstr.Int:
		n = int(port.IntVal)
	case intstr.String:
		found := false
		for _, p := range ports {
			if p.Name == port.StrVal {
				n, found = int(p.ContainerPort), true
				break
			}
		}
		if !found {
			var err error
			if n, err = strconv.Atoi(port.StrVal); err != nil {
				return 0, err
			}
		}
	default:
		return 0, fmt.Errorf("intOrString had no kind: %+v", port)
	}
	if n <= 0 || n > 65535 {
		return 0, fmt.Errorf("invalid port number: %d", n)
	}
	return n, nil
}

// ParseTarget is the target of a probe run by hand (`podgate probe`):
// host, the pod IP, must be an IP address; ports are container ports
// NAME=NUMBER for named-port resolution, env the container's variables
// NAME=VALUE for $(VAR) expansion. Errors name the flag (--host, --port,
// --env) and the value.
func ParseTarget(host string, ports, env []string) (Target, error) {
	if net.ParseIP(host) == nil {
		return Target{}, fmt.Errorf("--host %q is not an IP address", host)
	}
	t := Target{PodIP: host}
	for _, spec := range ports {
		name, num, ok := strings.Cut(spec, "=")
		if !ok || name == "" {
			return Target{}, fmt.Errorf("--port %q: want NAME=NUMBER", spec)
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 1 || n > 65535 {
			return Target{}, fmt.Errorf("--port %q: port number %q must be between 1 and 65535", spec, num)
		}
		t.Ports = append(t.Ports, corev1.ContainerPort{Name: name, ContainerPort: int32(n)})
	}
	for _, spec := range env {
		name, value, ok := strings.Cut(spec, "=")
		if !ok || name == "" {
			return Target{}, fmt.Errorf("--env %q: want NAME=VALUE", spec)
		}
		t.Env = append(t.Env, corev1.EnvVar{Name: name, Value: value})
	}
	return t, nil
}

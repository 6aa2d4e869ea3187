package probe

import (
	"fmt"
	"strconv"

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

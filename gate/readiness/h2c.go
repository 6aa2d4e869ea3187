package readiness

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// isPlainHTTP: an httpGet probe without TLS, which HTTP/2 auto-detection
// may try as h2c (probe.Runner.AttemptH2C).
func isPlainHTTP(p *corev1.Probe) bool {
	return p != nil && p.HTTPGet != nil && (p.HTTPGet.Scheme == "" || strings.EqualFold(string(p.HTTPGet.Scheme), "http"))
}
